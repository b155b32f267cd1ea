//! The journal's link to Redis, made from one reading of the access files:
//! to one Redis, or to a Redis Cluster, which the gateway notices on its
//! own (`CLUSTER INFO`) from the URL of any node, or from a list of seeds.
//! A follower's blocking reads get a connection of their own (`Tail`),
//! which on a cluster goes to the node serving the run's shard and follows
//! `MOVED` and `ASK` when a slot moves.

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Client, Cmd, Pipeline, RedisError, RedisFuture, Value};
use std::sync::{Arc, Mutex};
use url::Url;

use super::connect::{self, CONNECT_TIMEOUT, RESPONSE_TIMEOUT};
use super::keys::{self, Layout, SHARDS};
use super::{BLOCK, RedisAccess, SharedError};
use crate::config::RedisNodes;

/// A connection for the journal's commands: to one Redis, or to a cluster
/// (which routes each command by its key's slot).
#[derive(Clone)]
pub(super) enum Conn {
    One(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::One(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::One(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::One(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}

pub(super) struct Link {
    pub conn: Conn,
    pub layout: Layout,
    tails: Arc<Tails>,
}

/// What a follower's connection is made from.
struct Tails {
    /// The first node that answered (on a cluster, where a follower's
    /// connection starts when its shard's node is not known yet).
    node: Url,
    access: RedisAccess,
    /// On a cluster: each shard's node as a redirect last named it
    /// (`host:port`), so that the next follower goes there directly.
    known: Mutex<[Option<String>; SHARDS]>,
}

/// What `CLUSTER INFO` says of the node.
enum Mode {
    One,
    Cluster,
}

impl Link {
    pub async fn open(nodes: &RedisNodes, access: &RedisAccess) -> Result<Link, SharedError> {
        // The first seed that answers says whether Redis is a cluster.
        let mut failure = None;
        let mut found = None;
        for url in nodes.urls() {
            match ask_mode(url, access).await {
                Ok(mode) => {
                    found = Some((url.clone(), mode));
                    break;
                }
                Err(err) => failure = Some(err),
            }
        }
        let (node, mode) = match (found, failure) {
            (Some(found), _) => found,
            (None, Some(err)) => return Err(err),
            (None, None) => return Err(SharedError::NotConnected),
        };
        let tails = Arc::new(Tails {
            node: node.clone(),
            access: access.clone(),
            known: Mutex::new(Default::default()),
        });
        match mode {
            Mode::One if nodes.urls().len() > 1 => Err(SharedError::Misconfigured(
                "several Redis nodes are named, and Redis is not a cluster",
            )),
            Mode::One => {
                let client = connect::client(&node, access)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    .set_number_of_retries(2);
                let mut manager = client.get_connection_manager_with_config(config).await?;
                let _: String = redis::cmd("PING").query_async(&mut manager).await?;
                Ok(Link {
                    conn: Conn::One(manager),
                    layout: Layout::Single,
                    tails,
                })
            }
            Mode::Cluster if nodes.urls().iter().any(|url| database(url) != 0) => {
                Err(SharedError::Misconfigured(
                    "Redis runs in cluster mode, which has only database 0, and the journal's URL names another",
                ))
            }
            Mode::Cluster => {
                // The node that answered first, then the other seeds.
                let mut seeds = vec![node.clone()];
                seeds.extend(nodes.urls().iter().filter(|url| **url != node).cloned());
                let client = connect::cluster(&seeds, access)?;
                let mut conn = client.get_async_connection().await?;
                let _: String = redis::cmd("PING").query_async(&mut conn).await?;
                Ok(Link {
                    conn: Conn::Cluster(conn),
                    layout: Layout::Sharded,
                    tails,
                })
            }
        }
    }

    /// A connection of its own for a follower's blocking reads of run
    /// `key`'s log: a blocking command holds up every other command on its
    /// connection. On a cluster it goes to the node last known to serve
    /// the run's shard, else to the first node, and follows redirects.
    pub async fn tail(&self, key: &str) -> Result<Tail, SharedError> {
        let log = self.layout.of_run(key).log(key);
        let shard = keys::shard_digit(key);
        let cluster = self.layout == Layout::Sharded;
        let known = if cluster {
            self.tails
                .known
                .lock()
                .ok()
                .and_then(|known| known[shard].clone())
        } else {
            None
        };
        let url = known
            .and_then(|address| at(&self.tails.node, &address))
            .unwrap_or_else(|| self.tails.node.clone());
        let connection = tail_connection(&url, &self.tails.access).await?;
        Ok(Tail {
            connection,
            log,
            follow: cluster.then(|| (self.tails.clone(), shard)),
        })
    }
}

/// Asks the node at `url` whether it is a cluster's.
async fn ask_mode(url: &Url, access: &RedisAccess) -> Result<Mode, SharedError> {
    let client = connect::client(url, access)?;
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    // CLUSTER INFO, not INFO: a least-privilege user (-@dangerous) may
    // not run INFO. A Redis without cluster support refuses it.
    let info: Result<String, RedisError> = redis::cmd("CLUSTER")
        .arg("INFO")
        .query_async(&mut conn)
        .await;
    match info {
        Ok(info) if info.contains("cluster_state") => Ok(Mode::Cluster),
        Ok(_) => Ok(Mode::One),
        Err(err) if err.code() == Some("NOPERM") => {
            // A user who may not ask: a node of a cluster of several
            // redirects some shard, and the cluster's client, which asks
            // for the slots, could not be used either.
            for n in 0..SHARDS {
                let probe = Layout::Sharded.shard(n).probe("mode");
                let found: Result<i64, RedisError> =
                    redis::cmd("EXISTS").arg(probe).query_async(&mut conn).await;
                if found.is_err_and(|err| err.redirect_node().is_some()) {
                    return Err(SharedError::Misconfigured(
                        "Redis runs in cluster mode, and the journal's user may not ask it for \
                         its slots (CLUSTER INFO, CLUSTER SLOTS): runs would not be shared",
                    ));
                }
            }
            Ok(Mode::One)
        }
        Err(err) if err.code().is_some() => Ok(Mode::One),
        Err(err) => Err(err.into()),
    }
}

fn database(url: &Url) -> i64 {
    url.path().trim_start_matches('/').parse().unwrap_or(0)
}

/// `url` with its host and port replaced by `address` (`host:port`, as a
/// redirect names a node; an IPv6 host unbracketed).
fn at(url: &Url, address: &str) -> Option<Url> {
    let (host, port) = address.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let mut url = url.clone();
    url.set_host(Some(&host)).ok()?;
    url.set_port(Some(port)).ok()?;
    Some(url)
}

async fn tail_connection(
    url: &Url,
    access: &RedisAccess,
) -> Result<MultiplexedConnection, SharedError> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(BLOCK + RESPONSE_TIMEOUT));
    let client: Client = connect::client(url, access)?;
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// How many redirects one read follows: a slot being moved answers `ASK`
/// then `MOVED`; more than that is a cluster still changing, read again
/// later.
const MAX_HOPS: usize = 3;

/// A follower's own connection.
pub struct Tail {
    connection: MultiplexedConnection,
    /// The run's log.
    pub(super) log: String,
    /// On a cluster: where to learn and note the shard's node.
    follow: Option<(Arc<Tails>, usize)>,
}

impl Tail {
    /// Sends `cmd`, following a cluster's redirects to the node that
    /// serves the shard now.
    pub(super) async fn query(&mut self, cmd: &Cmd) -> Result<Value, SharedError> {
        let mut asking = false;
        for _ in 0..=MAX_HOPS {
            let reply: Result<Value, RedisError> = if asking {
                let mut pipe = redis::pipe();
                pipe.cmd("ASKING").ignore().add_command(cmd.clone());
                pipe.query_async::<(Value,)>(&mut self.connection)
                    .await
                    .map(|(value,)| value)
            } else {
                cmd.query_async(&mut self.connection).await
            };
            let err = match reply {
                Ok(value) => return Ok(value),
                Err(err) => err,
            };
            let (Some((tails, shard)), Some((address, _))) = (&self.follow, err.redirect_node())
            else {
                return Err(err.into());
            };
            let url = at(&tails.node, address).ok_or(SharedError::Malformed("redirect"))?;
            self.connection = tail_connection(&url, &tails.access).await?;
            asking = err.code() == Some("ASK");
            if !asking && let Ok(mut known) = tails.known.lock() {
                known[*shard] = Some(address.to_owned());
            }
        }
        Err(SharedError::Malformed("too many redirects"))
    }
}
