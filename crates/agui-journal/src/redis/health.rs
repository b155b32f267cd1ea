//! Whether the journal can share runs as configured, and if not, why: what
//! `/readyz` says. Reaching Redis is not enough:
//! - a Redis Cluster node reached as a single node would scatter one run's
//!   keys (and refuse the scripts that touch several): not shared;
//! - an ACL may refuse a command the journal needs, which the first run
//!   would find out mid-stream.
//!
//! So the check runs every command the journal sends, directly and inside
//! a script, on probe keys of its own (this replica's, expiring in seconds).
//!
//! What is wrong is told apart from Redis being down for a while: a refused
//! or timed-out connection is an outage (runs go on unshared, and say so),
//! anything else (a certificate not trusted, a password refused, a cluster,
//! an ACL) is the configuration, which no wait will mend.

use redis::Script;

use super::{PREFIX, RedisJournal, SharedError};

/// Why the journal cannot share runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// For a person (no address: Redis's errors name none).
    pub reason: String,
    /// The configuration is at fault, not an outage.
    pub misconfigured: bool,
}

impl Unusable {
    /// What `err` says of the journal.
    pub fn of(err: &SharedError) -> Unusable {
        let misconfigured = match err {
            SharedError::Redis(err) => {
                !(err.is_connection_refusal() || err.is_timeout() || err.is_connection_dropped())
            }
            // Never reached: whatever reaching it said was judged then.
            SharedError::NotConnected | SharedError::Full => false,
            SharedError::Malformed(_) => true,
        };
        Unusable {
            reason: err.to_string(),
            misconfigured,
        }
    }

    fn misconfigured(reason: String) -> Unusable {
        Unusable {
            reason,
            misconfigured: true,
        }
    }
}

/// The journal's commands inside a script (as its scripts call them), on
/// `KEYS[1]` and keys named after it; the direct ones follow it.
const PROBE: &str = r"
-- Each command by name, so that a refusal says which.
local function call(command, ...)
  local reply = redis.pcall(command, ...)
  if type(reply) == 'table' and reply.err then
    error({ err = command .. ': ' .. reply.err })
  end
  return reply
end
local k = KEYS[1]
local h, l, z, s = k .. ':h', k .. ':l', k .. ':z', k .. ':s'
call('SET', k, '1', 'PX', 10000)
call('GET', k)
call('EXISTS', k)
call('HSET', h, 'a', '1')
call('HSETNX', h, 'b', '1')
call('HGET', h, 'a')
call('HMGET', h, 'a', 'b')
call('HINCRBY', h, 'n', 1)
call('HDEL', h, 'b')
call('LPUSH', l, 'x')
call('LTRIM', l, 0, 0)
call('ZADD', z, 1, 'x')
call('ZCARD', z)
call('ZRANGE', z, 0, 0)
call('ZREMRANGEBYSCORE', z, 2, 3)
call('ZREM', z, 'y')
call('XADD', s, 'MAXLEN', 1, '*', 'f', '1')
call('XREVRANGE', s, '+', '-', 'COUNT', 1)
call('TIME')
for _, key in ipairs({ h, l, z, s }) do
  call('PEXPIRE', key, 10000)
end
return 1
";

impl RedisJournal {
    /// Whether runs can be shared now; the reason when not. Reaches Redis
    /// first when it was never reached.
    pub async fn check(&self) -> Result<(), Unusable> {
        let mut conn = self.conn().map_err(|err| Unusable::of(&err))?;
        let info: String = redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut conn)
            .await
            .map_err(|err| Unusable::of(&err.into()))?;
        if info.lines().any(|line| line.trim() == "cluster_enabled:1") {
            return Err(Unusable::misconfigured(
                "Redis runs in cluster mode, and this journal needs one Redis: runs would \
                 not be shared"
                    .to_owned(),
            ));
        }
        let key = format!("{PREFIX}probe:{}", self.replica);
        let refused = |err: redis::RedisError| {
            let outage = Unusable::of(&SharedError::Redis(err));
            if !outage.misconfigured {
                return outage;
            }
            Unusable::misconfigured(format!(
                "a command the journal needs was refused (check the ACL user's rights): {}",
                outage.reason
            ))
        };
        let _: i64 = Script::new(PROBE)
            .key(&key)
            .invoke_async(&mut conn)
            .await
            .map_err(refused)?;
        let (h, l, z, s) = (
            format!("{key}:h"),
            format!("{key}:l"),
            format!("{key}:z"),
            format!("{key}:s"),
        );
        let () = redis::pipe()
            .cmd("PING")
            .ignore()
            .cmd("GET")
            .arg(&key)
            .ignore()
            .cmd("EXISTS")
            .arg(&key)
            .ignore()
            .cmd("SET")
            .arg(&key)
            .arg("1")
            .arg("PX")
            .arg(10_000)
            .ignore()
            .cmd("INCRBY")
            .arg(&key)
            .arg(1)
            .ignore()
            .cmd("EXPIRE")
            .arg(&key)
            .arg(10)
            .ignore()
            .cmd("HGET")
            .arg(&h)
            .arg("a")
            .ignore()
            .cmd("HMGET")
            .arg(&h)
            .arg("a")
            .ignore()
            .cmd("HGETALL")
            .arg(&h)
            .ignore()
            .cmd("LRANGE")
            .arg(&l)
            .arg(0)
            .arg(0)
            .ignore()
            .cmd("ZREVRANGE")
            .arg(&z)
            .arg(0)
            .arg(0)
            .ignore()
            .cmd("XRANGE")
            .arg(&s)
            .arg("-")
            .arg("+")
            .arg("COUNT")
            .arg(1)
            .ignore()
            .cmd("XREVRANGE")
            .arg(&s)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .ignore()
            .cmd("XREAD")
            .arg("COUNT")
            .arg(1)
            .arg("STREAMS")
            .arg(&s)
            .arg("0")
            .ignore()
            .query_async(&mut conn)
            .await
            .map_err(refused)?;
        Ok(())
    }
}
