//! The shared journal: converted runs in Redis, so that any replica can
//! serve a reconnect, and a replica can take over a run whose holder died.
//!
//! Keys (all under a shard's prefix, `agui-gateway:` on one Redis,
//! `agui-gateway:{<shard tag>}:` on a Redis Cluster (`keys`), all with a
//! TTL):
//! - `run:{key}` hash: the owner digest, the run's spec (what another
//!   replica needs to rebuild it: agent, converter options, format, id tag,
//!   the forwarded headers), its thread, `done` once it ended.
//! - `run:{key}:log` stream: one entry per chunk written, id `0-<last frame
//!   number>` (so an append is also a check that it is the next), fields
//!   `f` (first frame number), `o` (the frames), `i` (the converter input
//!   that produced them, `InputOps`), `t` (`1` on the terminal chunk).
//! - `lease:{key}`: the replica holding the run's upstream connection,
//!   `PX` renewed every `RENEW_EVERY`; when it lapses (the holder died), a
//!   replica serving a reconnect may take the run over.
//! - `thread:{ref}` list: `run_id\tkey`, newest first, for `connect`.
//! - `thread:{ref}:info` hash: the thread's id as the client wrote it (at
//!   most 1 KiB: `agui::bounds`), when it started and last ran, the key
//!   of the list it is shown in (field `shelf`, its name since before
//!   `ThreadListKey`); `thread:{ref}:tasks` list: the A2A tasks its runs
//!   named; `threads:{list key}` sorted set: a caller's threads with an agent by last
//!   run (for a thread list). These outlive the runs, for
//!   `journal_thread_ttl_secs` after the last (`JournalLimits::
//!   thread_lifetime`): a replay then asks the agent for the tasks.
//! - `journal:runs`, `journal:sizes`, `journal:bytes`, `journal:threads`:
//!   what keeps the journal (each shard: its share) within
//!   `journal_max_bytes` and its threads within `MAX_THREADS` (`scripts`).
//! - `run:{key}` also holds `input`: the run's input messages, and `stop`
//!   once a client asked, on any replica, that the run stop.
//!
//! - `agui-gateway:{budget:<caller tag>}:<window>`, in no shard: the
//!   tokens a caller's runs spent in a token budget's window
//!   (`crate::budget`).
//!
//! Redis holds the run's forwarded headers (the user's credentials, as
//! the forwarding policy lets them through) for the length of the run plus
//! `journal_ttl_secs`: the takeover needs them to call the agent.

use std::time::Duration;

use redis::{RedisError, Value as RedisValue};
use serde::{Deserialize, Serialize};

mod budget;
mod connect;
mod entries;
mod health;
mod keys;
mod link;
mod scripts;
mod threads;

pub use self::connect::RedisAccess;
pub use self::entries::Entry;
use self::entries::parse_entries;
pub use self::health::Unusable;
pub use self::keys::run_key;
use self::keys::{Layout, Shard};
pub use self::link::Tail;
use self::link::{Conn, Link};
use self::scripts::Scripts;
use crate::config::{JournalLimits, RedisNodes};
use crate::identity::{Owner, RunIdentity, ThreadRef};
use crate::threads::{MAX_LISTED, MAX_THREADS, TASKS_PER_THREAD, unix_ms};
/// How long a lease holds without renewal.
pub const LEASE: Duration = Duration::from_secs(5);
/// How often the holder renews its lease (and its run's keys' TTL).
pub const RENEW_EVERY: Duration = Duration::from_millis(1500);
/// A live run's keys expire this long after the last renewal.
const LIVE_TTL: Duration = Duration::from_secs(120);
/// Runs remembered per thread for `connect`.
const RUNS_PER_THREAD: isize = crate::threads::RUNS_PER_THREAD as isize;
/// How long a follower's blocking read waits before it looks at the lease.
pub const BLOCK: Duration = Duration::from_secs(1);
/// Entries one read returns at most.
const READ_COUNT: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("the shared journal (Redis) failed: {0}")]
    Redis(#[from] RedisError),
    #[error("the shared journal holds a malformed run: {0}")]
    Malformed(&'static str),
    #[error("the shared journal is full (journal_max_bytes) with runs still going")]
    Full,
    #[error("the shared journal (Redis) has not been reached")]
    NotConnected,
    /// What the configuration gets wrong about Redis (a fixed phrase).
    #[error("the shared journal (Redis) cannot be used as configured: {0}")]
    Misconfigured(&'static str),
}

/// What another replica needs to rebuild a run's converter and call its
/// agent: the converter options, the output format, the id tag, the
/// forwarded headers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSpec {
    pub agent: String,
    pub thread_id: Option<String>,
    pub run_id: Option<String>,
    pub interrupts: bool,
    pub v1: bool,
    pub client_tools: Vec<String>,
    pub state: Option<serde_json::Value>,
    pub format: String,
    pub id_tag: String,
    pub headers: Vec<(String, String)>,
    /// For a run of an agent that does not stream, what a replica taking
    /// it over needs to read its task on (the converter's `PollMemo`);
    /// `None` for a streamed run, which a takeover resubscribes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll: Option<serde_json::Value>,
}

/// A run as another replica finds it.
#[derive(Clone)]
pub struct RemoteRun {
    pub key: String,
    pub owner: Owner,
    pub spec: RunSpec,
    pub done: bool,
    /// The run's A2A task, once its holder learned it.
    pub task: Option<String>,
}

pub struct RedisJournal {
    /// Swapped whole when the access files change (`reconnect`); none
    /// until Redis was first reached (`open`).
    link: std::sync::RwLock<Option<std::sync::Arc<Link>>>,
    /// This replica's id (the gateway id): the lease's value.
    replica: String,
    limits: JournalLimits,
    scripts: Scripts,
}

/// What a lease renewal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    Held,
    /// Held, and a client asked (on any replica) that the run stop.
    StopAsked,
    /// The lease is no longer this replica's.
    Lost,
}

/// One chunk to append: frames `first..=last`.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    pub first: u64,
    pub last: u64,
    pub out: &'a [u8],
    /// The converter input that produced them (`InputOp`s).
    pub input: &'a [u8],
    /// The run's terminal event is among them.
    pub terminal: bool,
    /// The run's A2A task, when just learned.
    pub task: Option<&'a str>,
}

/// What an append came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    Written,
    /// The lease is another replica's (this one was too slow to renew it,
    /// and the run was taken over): this replica must stop writing.
    NotHolder,
    /// The entry does not start right after the stream's last one.
    OutOfOrder,
    /// The journal has no room for it (`journal_max_bytes`, every older
    /// run still going), or the run is gone from it.
    NoRoom,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The longest a thread's keys are kept, whatever the configuration says
/// (Redis refuses an expiry past its clock's range).
const LONGEST_THREAD: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

impl RedisJournal {
    /// How long the journal's bookkeeping lives after its last write: as
    /// long as any run it counts.
    fn keep(&self) -> u64 {
        millis(LIVE_TTL.saturating_add(self.limits.ttl))
    }

    /// How long a thread's keys live after its last run, in ms.
    fn thread_lifetime(&self) -> u64 {
        millis(self.limits.thread_lifetime().min(LONGEST_THREAD))
    }
}

impl RedisJournal {
    /// Connects (and checks the connection), so that a wrong URL fails at
    /// startup rather than at the first run.
    pub async fn connect(
        nodes: &RedisNodes,
        access: &RedisAccess,
        replica: String,
        limits: &JournalLimits,
    ) -> Result<RedisJournal, SharedError> {
        let journal = RedisJournal::unconnected(replica, limits);
        journal.reconnect(nodes, access).await?;
        Ok(journal)
    }

    /// A journal not connected yet: every call fails (`NotConnected`) until
    /// `reconnect` reaches Redis. What a gateway starts with while Redis
    /// cannot be used, so that it can say why (`check`) rather than not
    /// start.
    pub fn unconnected(replica: String, limits: &JournalLimits) -> RedisJournal {
        RedisJournal {
            link: std::sync::RwLock::new(None),
            replica,
            limits: *limits,
            scripts: Scripts::new(),
        }
    }

    /// Whether Redis was reached (and the link kept since).
    pub fn is_connected(&self) -> bool {
        self.link().is_some()
    }

    /// Reaches Redis anew with `access` (its files changed: a renewed
    /// certificate, a rotated password); on failure the link that works
    /// stays.
    pub async fn reconnect(
        &self,
        nodes: &RedisNodes,
        access: &RedisAccess,
    ) -> Result<(), SharedError> {
        let link = Link::open(nodes, access).await?;
        *self
            .link
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(std::sync::Arc::new(link));
        Ok(())
    }

    fn link(&self) -> Option<std::sync::Arc<Link>> {
        self.link
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A connection, and how the keys are laid out on it.
    fn conn(&self) -> Result<(Conn, Layout), SharedError> {
        self.link()
            .map(|link| (link.conn.clone(), link.layout))
            .ok_or(SharedError::NotConnected)
    }

    /// A connection, and the shard of run `key`.
    fn on_run(&self, key: &str) -> Result<(Conn, Shard), SharedError> {
        let (conn, layout) = self.conn()?;
        Ok((conn, layout.of_run(key)))
    }

    /// The bounds one shard keeps: the journal's bytes and threads, split
    /// evenly.
    fn shard_bounds(&self, layout: Layout) -> (usize, usize) {
        let shards = layout.shards();
        (
            (self.limits.max_bytes / shards).max(1),
            MAX_THREADS.div_ceil(shards),
        )
    }

    /// A connection of its own for a follower's blocking reads of run
    /// `key`: a blocking command holds up every other command on its
    /// connection.
    pub async fn tail(&self, key: &str) -> Result<Tail, SharedError> {
        let link = self.link().ok_or(SharedError::NotConnected)?;
        link.tail(key).await
    }

    /// A new run, held by this replica, counted in the journal's bytes;
    /// `Full` when there is no room for it (it is not shared).
    pub async fn open(
        &self,
        key: &str,
        identity: &RunIdentity,
        spec: &RunSpec,
    ) -> Result<(), SharedError> {
        let spec = serde_json::to_string(spec).map_err(|_| SharedError::Malformed("spec"))?;
        let owner = identity.owner.to_hex();
        let input = identity.thread.as_ref().map(|t| t.input.as_ref());
        let cost =
            scripts::run_cost(&[owner.as_bytes(), spec.as_bytes(), input.unwrap_or_default()]);
        let (mut conn, layout) = self.conn()?;
        let shard = layout.of_run(key);
        let (max_bytes, max_threads) = self.shard_bounds(layout);
        let mut invocation = self.scripts.open.key(shard.run(key));
        invocation
            .key(shard.lease(key))
            .key(&shard.bookkeeping()[..]);
        if let Some(thread) = &identity.thread {
            let hex = thread.thread.to_hex();
            invocation
                .key(shard.thread(&thread.thread))
                .key(shard.thread_info(&hex))
                .key(shard.thread_tasks(&thread.thread))
                .key(shard.thread_list(&thread.list));
        }
        invocation
            .arg(&shard.prefix)
            .arg(key)
            .arg(&self.replica)
            .arg(owner)
            .arg(spec)
            .arg(millis(LEASE))
            .arg(millis(LIVE_TTL))
            .arg(self.keep())
            .arg(max_bytes)
            .arg(cost);
        if let Some(thread) = &identity.thread {
            invocation
                .arg(thread.input.as_ref())
                .arg(thread.thread.to_hex())
                .arg(thread.list.to_hex())
                .arg(format!("{}\t{key}", thread.run_id))
                .arg(&thread.id)
                .arg(unix_ms())
                .arg(self.thread_lifetime())
                .arg(RUNS_PER_THREAD)
                .arg(MAX_LISTED)
                .arg(max_threads);
        }
        let opened: i64 = invocation.invoke_async(&mut conn).await?;
        if opened == 1 {
            Ok(())
        } else {
            Err(SharedError::Full)
        }
    }

    /// Frames written (and the input that produced them), before any
    /// client has them, by the lease holder only and in order; on the
    /// terminal chunk the run is marked done, its keys get the finished
    /// run's TTL and the lease goes.
    pub async fn append(&self, key: &str, chunk: Chunk<'_>) -> Result<Appended, SharedError> {
        let Chunk {
            first,
            last,
            out,
            input,
            terminal,
            task,
        } = chunk;
        let (mut conn, layout) = self.conn()?;
        let shard = layout.of_run(key);
        let (max_bytes, _) = self.shard_bounds(layout);
        let outcome: i64 = self
            .scripts
            .append
            .key(shard.lease(key))
            .key(shard.log(key))
            .key(shard.run(key))
            .key(&shard.bookkeeping()[..3])
            .arg(&shard.prefix)
            .arg(&self.replica)
            .arg(first)
            .arg(last)
            .arg(out)
            .arg(input)
            .arg(u8::from(terminal))
            .arg(millis(self.limits.ttl))
            .arg(millis(LIVE_TTL))
            .arg(task.unwrap_or(""))
            .arg(key)
            .arg(max_bytes)
            .arg(scripts::entry_cost(&[
                out,
                input,
                task.unwrap_or("").as_bytes(),
            ]))
            .arg(self.keep())
            .invoke_async(&mut conn)
            .await?;
        Ok(match outcome {
            1 => Appended::Written,
            0 => Appended::NotHolder,
            -2 => Appended::NoRoom,
            _ => Appended::OutOfOrder,
        })
    }

    /// The run stops being shared (Redis failed for it, or it outgrew its
    /// bound): other replicas no longer find it (`find` says `None`), and
    /// its lease goes so that nobody takes over a run that goes on here.
    pub async fn unshare(&self, key: &str) -> Result<(), SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let _: i64 = self
            .scripts
            .unshare
            .key(shard.run(key))
            .invoke_async(&mut conn)
            .await?;
        self.release(key).await
    }

    /// Keeps the lease (and the run's keys, its thread's list too), and
    /// says whether a stop was asked.
    pub async fn renew(
        &self,
        key: &str,
        thread: Option<&ThreadRef>,
    ) -> Result<Renewal, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let mut invocation = self.scripts.renew.key(shard.lease(key));
        invocation
            .key(&shard.bookkeeping()[..3])
            .key(shard.run(key))
            .key(shard.log(key));
        if let Some(thread) = thread {
            // The same shard: a run's key is chosen in its thread's.
            invocation.key(shard.thread(thread));
        }
        let held: i64 = invocation
            .arg(&shard.prefix)
            .arg(&self.replica)
            .arg(millis(LEASE))
            .arg(millis(LIVE_TTL))
            .arg(self.keep())
            .invoke_async(&mut conn)
            .await?;
        Ok(match held {
            1 => Renewal::Held,
            2 => Renewal::StopAsked,
            _ => Renewal::Lost,
        })
    }

    /// Asks the replica holding run `key` to stop it (it reads this when
    /// it next renews the lease, within `RENEW_EVERY`); false when the run
    /// is unknown or over.
    pub async fn request_stop(&self, key: &str) -> Result<bool, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let asked: i64 = self
            .scripts
            .stop
            .key(shard.run(key))
            .invoke_async(&mut conn)
            .await?;
        Ok(asked == 1)
    }

    pub async fn release(&self, key: &str) -> Result<(), SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let _: i64 = self
            .scripts
            .release
            .key(shard.lease(key))
            .arg(&self.replica)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Takes the lease of a run whose holder let it lapse.
    pub async fn take_over(&self, key: &str) -> Result<bool, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let taken: Option<String> = redis::cmd("SET")
            .arg(shard.lease(key))
            .arg(&self.replica)
            .arg("NX")
            .arg("PX")
            .arg(millis(LEASE))
            .query_async(&mut conn)
            .await?;
        Ok(taken.is_some())
    }

    pub async fn is_leased(&self, key: &str) -> Result<bool, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let exists: i64 = redis::cmd("EXISTS")
            .arg(shard.lease(key))
            .query_async(&mut conn)
            .await?;
        Ok(exists == 1)
    }

    /// The run an event id names, as stored.
    pub async fn find(&self, key: &str) -> Result<Option<RemoteRun>, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let fields: std::collections::HashMap<String, Vec<u8>> = redis::cmd("HGETALL")
            .arg(shard.run(key))
            .query_async(&mut conn)
            .await?;
        if fields.is_empty() || fields.contains_key("unshared") {
            return Ok(None);
        }
        let text = |name: &str| {
            fields
                .get(name)
                .and_then(|v| std::str::from_utf8(v).ok())
                .ok_or(SharedError::Malformed("a field is missing"))
        };
        let owner = Owner::from_hex(text("owner")?).ok_or(SharedError::Malformed("owner"))?;
        let spec =
            serde_json::from_str(text("spec")?).map_err(|_| SharedError::Malformed("spec"))?;
        Ok(Some(RemoteRun {
            key: key.to_owned(),
            owner,
            spec,
            done: fields.contains_key("done"),
            task: text("task").ok().map(str::to_owned),
        }))
    }

    /// Every entry of a run, for a takeover's rebuild.
    pub async fn all_entries(&self, key: &str) -> Result<Vec<Entry>, SharedError> {
        let (mut conn, shard) = self.on_run(key)?;
        let reply: RedisValue = redis::cmd("XRANGE")
            .arg(shard.log(key))
            .arg("-")
            .arg("+")
            .query_async(&mut conn)
            .await?;
        parse_entries(reply)
    }
}

impl Tail {
    /// The number of the last frame written (0 for none).
    pub async fn last_frame(&mut self) -> Result<u64, SharedError> {
        let mut cmd = redis::cmd("XREVRANGE");
        cmd.arg(&self.log).arg("+").arg("-").arg("COUNT").arg(1);
        let reply = self.query(&cmd).await?;
        Ok(parse_entries(reply)?.first().map_or(0, |entry| entry.last))
    }

    /// Entries after frame `after`'s entry id (exclusive), at most
    /// `READ_COUNT`; with `block`, waits that long for one.
    pub async fn read_after(
        &mut self,
        after: u64,
        block: Option<Duration>,
    ) -> Result<Vec<Entry>, SharedError> {
        let mut cmd;
        match block {
            Some(block) => {
                cmd = redis::cmd("XREAD");
                cmd.arg("COUNT")
                    .arg(READ_COUNT)
                    .arg("BLOCK")
                    .arg(millis(block))
                    .arg("STREAMS")
                    .arg(&self.log)
                    .arg(format!("0-{after}"));
            }
            None => {
                cmd = redis::cmd("XRANGE");
                cmd.arg(&self.log)
                    .arg(format!("(0-{after}"))
                    .arg("+")
                    .arg("COUNT")
                    .arg(READ_COUNT);
            }
        }
        let reply = self.query(&cmd).await?;
        let entries = match block {
            // XREAD: [[stream, [entries…]]], or nil on timeout.
            Some(_) => match reply {
                RedisValue::Array(mut streams) if !streams.is_empty() => match streams.remove(0) {
                    RedisValue::Array(mut pair) if pair.len() == 2 => pair.remove(1),
                    _ => return Err(SharedError::Malformed("XREAD reply")),
                },
                _ => return Ok(Vec::new()),
            },
            None => reply,
        };
        parse_entries(entries)
    }
}
