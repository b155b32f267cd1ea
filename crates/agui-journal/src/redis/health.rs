//! Whether the journal can share runs as configured, and if not, why: what
//! `/readyz` says. Reaching Redis is not enough:
//! - a Redis Cluster must serve every slot, and a cluster taken for a
//!   single node (its user may not ask `CLUSTER INFO`) would scatter one
//!   run's keys: not shared;
//! - an ACL may refuse a command the journal needs, which the first run
//!   would find out mid-stream.
//!
//! So the check runs every command the journal sends, directly and inside
//! a script, on probe keys of its own (this replica's, expiring in
//! seconds), in every shard: on a cluster each node holding one is asked.
//!
//! What is wrong with the configuration, which no wait will mend (a
//! certificate not trusted, a user or password refused, a cluster, an ACL
//! refusing a command), is told apart from everything else Redis may say
//! for a while (down, full, loading, read-only after a failover): runs then
//! go on unshared, and say so, and the pod stays ready.

use redis::{ErrorKind, RedisError, Script};

use super::keys::{Layout, Shard};
use super::link::Conn;
use super::{RedisJournal, SharedError};

/// Why the journal cannot share runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// For anyone (`/readyz`): a fixed phrase, never an address or a name
    /// from a certificate.
    pub reason: String,
    /// For the log: what Redis or TLS said.
    pub detail: String,
    /// The configuration is at fault, not an outage.
    pub misconfigured: bool,
}

impl Unusable {
    /// What `err` says of the journal.
    pub fn of(err: &SharedError) -> Unusable {
        let detail = err.to_string();
        let (reason, misconfigured) = match err {
            SharedError::Redis(err) => match misconfiguration(err) {
                Some(reason) => (reason, true),
                None => ("Redis cannot be used now (an outage)".to_owned(), false),
            },
            SharedError::NotConnected => ("Redis has not been reached".to_owned(), false),
            SharedError::Misconfigured(phrase) => ((*phrase).to_owned(), true),
            SharedError::Full | SharedError::Malformed(_) => (detail.clone(), false),
        };
        Unusable {
            reason,
            detail,
            misconfigured,
        }
    }
}

/// What in `err` is the configuration's fault, as a fixed phrase.
fn misconfiguration(err: &RedisError) -> Option<String> {
    if err.code() == Some("NOPERM") {
        // The probe names the command: one of the journal's own, no secret.
        let command = err
            .detail()
            .and_then(|d| d.split_once('[')?.1.split(']').next())
            .unwrap_or("a command");
        return Some(format!(
            "Redis's ACL refuses {command}, which the journal needs: runs would not be shared"
        ));
    }
    let text = err.to_string().to_ascii_lowercase();
    // Only a link to one node sees these: the cluster's follows redirects,
    // and its scripts touch one slot.
    if matches!(err.code(), Some("MOVED" | "ASK" | "CROSSSLOT"))
        || text.contains("non local key")
        || text.contains("hash to the same slot")
    {
        return Some(
            "Redis runs in cluster mode, and the journal's user may not ask it for its slots \
             (CLUSTER INFO, CLUSTER SLOTS): runs would not be shared"
                .to_owned(),
        );
    }
    if err.kind() == ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("WRONGPASS" | "NOAUTH"))
    {
        return Some("Redis refuses the journal's user or password".to_owned());
    }
    if err.is_io_error() && (text.contains("certificate") || text.contains("alert")) {
        return Some(
            "Redis's TLS certificate is not trusted or not for its name, or Redis wants a \
             client certificate the journal does not have (journal_tls)"
                .to_owned(),
        );
    }
    None
}

/// The journal's commands inside a script (as its scripts call them), on
/// `KEYS[1]` and keys named after it; the direct ones follow it. A refusal
/// is raised again with the command's name.
const PROBE: &str = r#"
local function call(command, ...)
  local reply = redis.pcall(command, ...)
  if type(reply) == 'table' and reply.err then
    local e = reply.err
    if string.find(e, 'NOPERM', 1, true) or string.find(e, 'permission', 1, true)
      or string.find(e, "can't run this command", 1, true) then
      error({ err = 'NOPERM [' .. command .. '] ' .. e })
    end
    error({ err = e })
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
call('DEL', k .. ':gone')
return 1
"#;

impl RedisJournal {
    /// Whether runs can be shared now; why not when not.
    pub async fn check(&self) -> Result<(), Unusable> {
        let (mut conn, layout) = self.conn().map_err(|err| Unusable::of(&err))?;
        // CLUSTER INFO, not INFO: a least-privilege user (-@dangerous)
        // may not run INFO. A standalone Redis says it has no cluster.
        let cluster: Result<String, RedisError> = redis::cmd("CLUSTER")
            .arg("INFO")
            .query_async(&mut conn)
            .await;
        let outage = |reason: &str, detail: &str| Unusable {
            reason: reason.to_owned(),
            detail: detail.to_owned(),
            misconfigured: false,
        };
        match (layout, cluster) {
            (Layout::Single, Ok(info)) if info.contains("cluster_state") => {
                // It was not when the link was made: the next check
                // reaches it anew, as a cluster.
                return Err(outage(
                    "Redis now runs in cluster mode: the journal reaches it anew",
                    "CLUSTER INFO answered on a link to one Redis",
                ));
            }
            (Layout::Sharded, Ok(info)) if !info.contains("cluster_state:ok") => {
                return Err(outage(
                    "the Redis Cluster does not serve all its slots now (an outage)",
                    "CLUSTER INFO: cluster_state is not ok",
                ));
            }
            (_, Ok(_)) => {}
            // Not a cluster, or not allowed to ask: the probe says the rest.
            (_, Err(err)) if err.code().is_some() => {}
            (_, Err(err)) => return Err(Unusable::of(&err.into())),
        }
        // Hashed once for every shard's probe.
        let probe = Script::new(PROBE);
        for shard in layout.every_shard() {
            self.probe(&mut conn, &probe, &shard).await?;
        }
        Ok(())
    }

    /// Every command the journal sends, on this replica's probe keys in
    /// `shard`.
    async fn probe(&self, conn: &mut Conn, script: &Script, shard: &Shard) -> Result<(), Unusable> {
        let key = shard.probe(&self.replica);
        let failed = |err: RedisError| Unusable::of(&SharedError::Redis(err));
        let _: i64 = script.key(&key).invoke_async(conn).await.map_err(failed)?;
        let (h, l, z, s) = (
            format!("{key}:h"),
            format!("{key}:l"),
            format!("{key}:z"),
            format!("{key}:s"),
        );
        // Each direct command the journal sends, in a transaction as the
        // budgets' writes are; a refusal names the command.
        let commands: [(&str, Vec<String>); 17] = [
            ("GET", vec![key.clone()]),
            ("EXISTS", vec![key.clone()]),
            (
                "SET",
                vec![key.clone(), "1".into(), "PX".into(), "10000".into()],
            ),
            ("INCRBY", vec![key.clone(), "1".into()]),
            ("EXPIRE", vec![key.clone(), "10".into()]),
            ("PEXPIRE", vec![key.clone(), "10000".into()]),
            ("HGET", vec![h.clone(), "a".into()]),
            ("HMGET", vec![h.clone(), "a".into()]),
            ("HGETALL", vec![h]),
            ("RPUSH", vec![l.clone(), "y".into()]),
            ("LREM", vec![l.clone(), "0".into(), "y".into()]),
            ("LTRIM", vec![l.clone(), "0".into(), "0".into()]),
            ("LRANGE", vec![l, "0".into(), "0".into()]),
            ("ZREVRANGE", vec![z, "0".into(), "0".into()]),
            (
                "XRANGE",
                vec![
                    s.clone(),
                    "-".into(),
                    "+".into(),
                    "COUNT".into(),
                    "1".into(),
                ],
            ),
            (
                "XREVRANGE",
                vec![
                    s.clone(),
                    "+".into(),
                    "-".into(),
                    "COUNT".into(),
                    "1".into(),
                ],
            ),
            (
                "XREAD",
                vec!["COUNT".into(), "1".into(), "STREAMS".into(), s, "0".into()],
            ),
        ];
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (name, args) in &commands {
            pipe.cmd(name).arg(args).ignore();
        }
        let done: Result<(), RedisError> = pipe.query_async(conn).await;
        if let Err(err) = done {
            // A transaction refused names no command: ask each alone.
            if err.code() == Some("NOPERM") || err.code() == Some("EXECABORT") {
                for (name, args) in &commands {
                    let alone: Result<redis::Value, RedisError> =
                        redis::cmd(name).arg(args).query_async(conn).await;
                    if let Err(err) = alone
                        && err.code() == Some("NOPERM")
                    {
                        let mut unusable = Unusable::of(&SharedError::Redis(err));
                        unusable.reason = format!(
                            "Redis's ACL refuses {name}, which the journal needs: runs would \
                             not be shared"
                        );
                        return Err(unusable);
                    }
                }
            }
            return Err(failed(err));
        }
        Ok(())
    }
}
