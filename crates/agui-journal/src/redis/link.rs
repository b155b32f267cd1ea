//! The journal's link to Redis, made from one reading of the access files:
//! to one Redis, or to a Redis Cluster, which the gateway notices on its
//! own (`CLUSTER INFO`) from the URL of any node, or from a list of seeds.
//! A follower's blocking reads get a connection of their own (`Tail`),
//! which on a cluster goes to the node serving the run's shard and follows
//! `MOVED` and `ASK` when a slot moves.

use std::sync::{Arc, Mutex};

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Client, Cmd, Pipeline, RedisError, RedisFuture, Value};
use url::Url;

use super::connect::{self, CONNECT_TIMEOUT, RESPONSE_TIMEOUT};
use super::keys::{self, Layout, SHARDS};
use super::{BLOCK, RedisAccess, SharedError, Unusable};
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
    /// The node that answered, then the other seeds: where a follower's
    /// connection goes on one Redis, and on a cluster when the cluster
    /// does not say which node serves the run's shard.
    nodes: Vec<Url>,
    reach: connect::Reach,
    /// A client per node reached (its TLS settings built once, not per
    /// follower), at most `MAX_NODE_CLIENTS`.
    clients: Mutex<Vec<(Url, Client)>>,
}

/// Node clients kept for followers' connections: a cluster's primaries
/// and the seeds, well within this.
const MAX_NODE_CLIENTS: usize = 64;

impl Tails {
    /// A connection of its own to the node at `url`, for blocking reads.
    async fn connection(&self, url: &Url) -> Result<MultiplexedConnection, SharedError> {
        let kept = self.clients.lock().ok().and_then(|clients| {
            clients
                .iter()
                .find(|(at, _)| at == url)
                .map(|(_, client)| client.clone())
        });
        let client = match kept {
            Some(client) => client,
            None => {
                let client = self.reach.client(url)?;
                if let Ok(mut clients) = self.clients.lock()
                    && clients.len() < MAX_NODE_CLIENTS
                {
                    clients.push((url.clone(), client.clone()));
                }
                client
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(BLOCK + RESPONSE_TIMEOUT));
        Ok(client
            .get_multiplexed_async_connection_with_config(&config)
            .await?)
    }
}

/// What `CLUSTER INFO` says of the node.
enum Mode {
    One,
    Cluster,
}

impl Link {
    pub async fn open(nodes: &RedisNodes, access: &RedisAccess) -> Result<Link, SharedError> {
        let reach = connect::Reach::new(access, nodes.is_tls());
        // The first seed that answers says whether Redis is a cluster;
        // when none does, what the configuration gets wrong is said over
        // an outage.
        let mut failure: Option<SharedError> = None;
        let mut found = None;
        for url in nodes.urls() {
            match ask_mode(&reach, url).await {
                Ok(mode) => {
                    found = Some((url.clone(), mode));
                    break;
                }
                Err(err) => {
                    let misconfigured = |err: &SharedError| Unusable::of(err).misconfigured;
                    if !failure.as_ref().is_some_and(misconfigured) {
                        failure = Some(err);
                    }
                }
            }
        }
        let (node, mode) = match (found, failure) {
            (Some(found), _) => found,
            (None, Some(err)) => return Err(err),
            (None, None) => return Err(SharedError::NotConnected),
        };
        let mut seeds = vec![node.clone()];
        seeds.extend(nodes.urls().iter().filter(|url| **url != node).cloned());
        let tails = Tails {
            nodes: seeds,
            reach,
            clients: Mutex::new(Vec::new()),
        };
        match mode {
            Mode::One if nodes.urls().len() > 1 => Err(SharedError::Misconfigured(
                "several Redis nodes are named, and Redis is not a cluster",
            )),
            Mode::One => {
                let client = tails.reach.client(&node)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    .set_number_of_retries(2);
                let mut manager = client.get_connection_manager_with_config(config).await?;
                let _: String = redis::cmd("PING").query_async(&mut manager).await?;
                Ok(Link {
                    conn: Conn::One(manager),
                    layout: Layout::Single,
                    tails: Arc::new(tails),
                })
            }
            Mode::Cluster if nodes.urls().iter().any(|url| database(url) != 0) => {
                Err(SharedError::Misconfigured(
                    "Redis runs in cluster mode, which has only database 0, and the journal's URL \
                     names another",
                ))
            }
            Mode::Cluster => {
                let client = tails.reach.cluster(&tails.nodes)?;
                let mut conn = client.get_async_connection().await?;
                let _: String = redis::cmd("PING").query_async(&mut conn).await?;
                Ok(Link {
                    conn: Conn::Cluster(conn),
                    layout: Layout::Sharded,
                    tails: Arc::new(tails),
                })
            }
        }
    }

    /// A connection of its own for a follower's blocking reads of run
    /// `key`'s log: a blocking command holds up every other command on its
    /// connection. On a cluster it goes to the node the cluster says
    /// serves the run's shard now (after a failover, the new primary),
    /// else to the seeds in turn, and follows redirects.
    pub async fn tail(&self, key: &str) -> Result<Tail, SharedError> {
        let log = self.layout.of_run(key).log(key);
        let Conn::Cluster(cluster) = &self.conn else {
            let connection = self.tails.connection(&self.tails.nodes[0]).await?;
            return Ok(Tail {
                connection,
                log,
                cluster: None,
            });
        };
        let slot = keys::shard_slot(keys::shard_digit(key));
        let owner = owner(&mut cluster.clone(), slot)
            .await
            .and_then(|address| at(&self.tails.nodes[0], &address));
        let mut failure = SharedError::NotConnected;
        for url in owner.iter().chain(&self.tails.nodes) {
            match self.tails.connection(url).await {
                Ok(connection) => {
                    return Ok(Tail {
                        connection,
                        log,
                        cluster: Some(self.tails.clone()),
                    });
                }
                Err(err) => failure = err,
            }
        }
        Err(failure)
    }
}

/// The `host:port` of the primary serving `slot`, as the cluster says
/// (`CLUSTER SLOTS`); none when it does not say (a node that announces no
/// endpoint, an answer of another shape).
async fn owner(cluster: &mut ClusterConnection, slot: u16) -> Option<String> {
    let slots: Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(cluster)
        .await
        .ok()?;
    let Value::Array(ranges) = slots else {
        return None;
    };
    let int = |value: &Value| match value {
        Value::Int(n) => Some(*n),
        _ => None,
    };
    ranges.iter().find_map(|range| {
        let Value::Array(range) = range else {
            return None;
        };
        let (first, last) = (int(range.first()?)?, int(range.get(1)?)?);
        if !(first..=last).contains(&i64::from(slot)) {
            return None;
        }
        let Value::Array(primary) = range.get(2)? else {
            return None;
        };
        let host = match primary.first()? {
            Value::BulkString(host) => String::from_utf8(host.clone()).ok()?,
            Value::SimpleString(host) => host.clone(),
            _ => return None,
        };
        let port = int(primary.get(1)?)?;
        (!host.is_empty() && host != "?").then(|| format!("{host}:{port}"))
    })
}

/// Asks the node at `url` whether it is a cluster's (on database 0: a
/// cluster node refuses any other, which is said as such afterwards).
async fn ask_mode(reach: &connect::Reach, url: &Url) -> Result<Mode, SharedError> {
    let mut url = url.clone();
    url.set_path("/0");
    let client = reach.client(&url)?;
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    // CLUSTER INFO, not INFO: a least-privilege user (-@dangerous) may
    // not run INFO. A Redis without cluster support refuses it, or does
    // not know it.
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
        Err(err) if no_cluster(&err) => Ok(Mode::One),
        // Loading, busy, down: asked again at the next check.
        Err(err) => Err(err.into()),
    }
}

/// Whether `err` is a Redis saying it has no cluster (support disabled,
/// or a managed Redis that does not know the command).
fn no_cluster(err: &RedisError) -> bool {
    let text = err.to_string().to_ascii_lowercase();
    text.contains("cluster support disabled") || text.contains("unknown command")
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

/// How many redirects one read follows: a slot being moved answers `ASK`
/// then `MOVED`; more than that is a cluster still changing, read again
/// later.
const MAX_HOPS: usize = 3;

/// A follower's own connection.
pub struct Tail {
    connection: MultiplexedConnection,
    /// The run's log.
    pub(super) log: String,
    /// On a cluster: how a redirect's node is reached (like the first
    /// node).
    cluster: Option<Arc<Tails>>,
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
            let (Some(tails), Some((address, _))) = (&self.cluster, err.redirect_node()) else {
                return Err(err.into());
            };
            let url = at(&tails.nodes[0], address).ok_or(SharedError::Malformed("redirect"))?;
            self.connection = tails.connection(&url).await?;
            asking = err.code() == Some("ASK");
        }
        Err(SharedError::Malformed("too many redirects"))
    }
}
