//! What every request shares: the configuration, the agents, the metrics,
//! the shutdown signals, the stream cap and the memory of waiting tasks.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use a2a_agui::{ErrorCode, MAX_ID_BYTES};
use agui_edge::auth::{AuthSetupError, Authenticator, FetchLimits};
use agui_edge::ratelimit::RateLimiter;
use agui_journal::budget::Budgets;
use agui_journal::redis::RedisJournal;
use agui_journal::replays::Replays;
use agui_journal::{CallerDigest, MemoryJournal, ThreadRef, unix_ms};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::reload::Changes;
use crate::config::{AgentConfig, Config};
use crate::obs::metrics::Metrics;
use crate::signing::{Signer, TrustedKeys};
use crate::upstream::capabilities::Fronted;
use crate::upstream::{Agent, CardInfo};

pub struct AppState {
    /// One permit per open stream, held by the stream's body.
    streams: Arc<Semaphore>,
    pub config: Config,
    pub agents: Agents,
    /// `None` when authentication is off.
    pub auth: Option<Arc<Authenticator>>,
    pub rate_limit: Option<Arc<RateLimiter>>,
    pub metrics: Arc<Metrics>,
    pub shutdown: Shutdown,
    pub threads: Arc<Threads>,
    /// Converted runs, for reconnects, detached runs and `connect`
    /// (`None` with `journal = "off"`).
    pub journal: Option<MemoryJournal>,
    /// With a Redis journal: the runs every replica shares.
    pub redis: Option<Arc<RedisJournal>>,
    /// The gateway's key for the cards it serves (`[card_signing]`).
    pub card_signer: Option<crate::signing::Signer>,
    /// Thread replays being read, shared and bounded.
    pub replays: Replays,
    /// Each caller's token budget (`None` without `token_budget`).
    pub budgets: Option<Budgets>,
    /// Whether the shared journal can share runs (`None` without one).
    pub journal_health: Option<crate::config::journal_access::JournalHealth>,
}

pub type AppHandle = Arc<AppState>;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("gateway could not build its HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    AgentClient(#[from] crate::upstream::tls::ClientError),
    #[error("{0}")]
    CardSigning(String),
    #[error(transparent)]
    Auth(#[from] AuthSetupError),
    #[error(
        "agents.{agent}.headers_env: {header} needs {variable}, which is not set (or not a valid header value)"
    )]
    HeaderEnv {
        agent: String,
        header: String,
        variable: String,
    },
    /// The shared journal could not be reached; the URL without its password.
    #[error("journal {url}: {message}")]
    Journal { url: String, message: String },
}

impl AppState {
    /// The state a serving gateway runs on: `new`, then the connection to
    /// the shared journal when the configuration names one.
    pub async fn build(config: Config, shutdown: Shutdown) -> Result<AppState, StartError> {
        let mut state = AppState::new(config, shutdown)?;
        if let crate::config::Backend::Redis(nodes) = &state.config.journal.backend {
            let files = &state.config.journal.access;
            let access = crate::config::journal_access::read(files, std::time::SystemTime::now())
                .map_err(|err| StartError::Journal {
                url: crate::config::journal_access::redacted(nodes.first()),
                message: err.to_string(),
            })?;
            // A journal that cannot be used does not stop the start: the
            // gateway says why (`/readyz`, the log) and keeps trying.
            let (id, limits) = (
                state.config.gateway_id.clone(),
                &state.config.journal.limits,
            );
            let journal = Arc::new(RedisJournal::unconnected(id, limits));
            let (nodes, files) = (nodes.clone(), files.clone());
            let health = crate::config::journal_access::keep(journal.clone(), nodes, files, access);
            state.journal_health = Some(health.await);
            state.budgets = state.budgets.take().map(|b| b.shared_by(journal.clone()));
            state.redis = Some(journal);
        }
        Ok(state)
    }

    /// The state without the shared journal (tests, tools).
    pub fn new(config: Config, shutdown: Shutdown) -> Result<AppState, StartError> {
        let (agents, card_signer) = agents_of(&config, |_| None)?;
        let journal = config
            .journal
            .backend
            .is_on()
            .then(|| MemoryJournal::new(config.journal.limits));
        let config_budget = (
            config.limits.token_budget,
            config.limits.token_budget_window,
        );
        let metrics = Metrics::default();
        for (name, agent) in &agents {
            count_agent(&metrics, name, agent);
        }
        Ok(AppState {
            streams: Arc::new(Semaphore::new(config.limits.max_streams)),
            auth: authenticator(&config)?,
            rate_limit: config
                .rate_limit
                .map(|limit| Arc::new(RateLimiter::new(limit))),
            config,
            agents,
            metrics: Arc::new(metrics),
            shutdown,
            threads: Arc::default(),
            journal,
            redis: None,
            card_signer,
            replays: Replays::default(),
            budgets: (config_budget.0 > 0).then(|| Budgets::new(config_budget.0, config_budget.1)),
            journal_health: None,
        })
    }

    /// The state new requests get after a reload to `config` (`settle`d
    /// against this one: `changes`). What runs keep across it is shared:
    /// the journals, the metrics, the stream cap and its count, the
    /// shutdown, threads and replays, the budgets' counts (under the new
    /// limit and window), the rate limiter while its settings stay, and
    /// every agent whose configuration did not change (its card, its
    /// channels). A run in flight holds the state it started with.
    pub fn reloaded(&self, config: Config, changes: &Changes) -> Result<AppState, StartError> {
        let (agents, card_signer) = agents_of(&config, |name| {
            let changed =
                changes.rebuilds_agents() || changes.agents_changed.iter().any(|n| n == name);
            self.agents.get(name).filter(|_| !changed).cloned()
        })?;
        for (name, agent) in &agents {
            if !self
                .agents
                .get(name)
                .is_some_and(|was| Arc::ptr_eq(was, agent))
            {
                count_agent(&self.metrics, name, agent);
            }
        }
        // A keys file, or a JWT key file, may hold a rotated key at its path.
        let key_file = matches!(
            config.auth.jwt.as_ref().map(|jwt| &jwt.key),
            Some(agui_edge::auth::JwtKey::PublicKeyFile(_))
        );
        let auth = if changes.applied.contains(&"auth")
            || changes.rebuilds_agents()
            || config.auth.api_keys_file.is_some()
            || key_file
        {
            authenticator(&config)?
        } else {
            self.auth.clone()
        };
        let rate_limit = if changes.applied.contains(&"rate_limit") {
            config
                .rate_limit
                .map(|limit| Arc::new(RateLimiter::new(limit)))
        } else {
            self.rate_limit.clone()
        };
        let (budget, window) = (
            config.limits.token_budget,
            config.limits.token_budget_window,
        );
        let budgets = match &self.budgets {
            _ if budget == 0 => None,
            Some(budgets) => Some(budgets.resized(budget, window)),
            None => Some(match &self.redis {
                Some(journal) => Budgets::new(budget, window).shared_by(journal.clone()),
                None => Budgets::new(budget, window),
            }),
        };
        Ok(AppState {
            streams: self.streams.clone(),
            auth,
            rate_limit,
            config,
            agents,
            metrics: self.metrics.clone(),
            shutdown: self.shutdown.clone(),
            threads: self.threads.clone(),
            journal: self.journal.clone(),
            redis: self.redis.clone(),
            card_signer,
            replays: self.replays.clone(),
            budgets,
            journal_health: self.journal_health.clone(),
        })
    }

    /// A place for one more stream. Refused at once rather than
    /// queued: a client waiting on a full gateway would hold its socket
    /// with nothing to show, while a 503 lets a balancer try elsewhere.
    /// The limit is the gateway's; a refusal counts under the agent asked
    /// for (`agent`: a configured name or `NO_AGENT`, so labels stay
    /// bounded).
    pub fn stream_permit(&self, agent: &str) -> Result<OwnedSemaphorePermit, StreamsFull> {
        self.streams.clone().try_acquire_owned().map_err(|_| {
            self.metrics
                .count_error(agent, ErrorCode::GatewayBusy.as_str());
            StreamsFull {
                max: self.config.limits.max_streams,
            }
        })
    }

    /// Nothing a drain waits for: no request being handled, no stream.
    pub fn is_idle(&self) -> bool {
        self.shutdown.unanswered.count() == 0 && self.open_streams() == 0
    }

    /// Streams open now (attached, detached or passed through).
    pub fn open_streams(&self) -> usize {
        self.config
            .limits
            .max_streams
            .saturating_sub(self.streams.available_permits())
    }

    /// `agent`'s AG-UI capabilities as this gateway fronts it, once its
    /// card is known (`card`: the one the caller read).
    pub fn capabilities(&self, agent: &Agent, card: Option<&CardInfo>) -> Option<Value> {
        let fronted = Fronted {
            interrupts: agent.config.interrupts,
            resumable: self.journal.is_some(),
        };
        Some(card?.capabilities(fronted).clone())
    }

    /// What counts a run's tokens against `caller`'s budget when the run
    /// ends (`relay::Conversion::on_usage`); `None` without budgets. In
    /// Redis the charge is written after the run, and one Redis did not
    /// take is lost (logged, counted).
    pub fn charger(self: &Arc<Self>, caller: &CallerDigest) -> Option<Box<dyn FnOnce(u64) + Send>> {
        let budgets = self.budgets.as_ref()?;
        let tag = caller.budget_tag();
        if !budgets.is_shared() {
            let state = self.clone();
            return Some(Box::new(move |tokens| {
                if let Some(budgets) = &state.budgets {
                    budgets.charge_here(&tag, tokens, unix_ms() / 1000);
                }
            }));
        }
        let state = self.clone();
        Some(Box::new(move |tokens| {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            runtime.spawn(async move {
                let Some(budgets) = &state.budgets else {
                    return;
                };
                if let Err(err) = budgets.charge(&tag, tokens, unix_ms() / 1000).await {
                    tracing::warn!(
                        "{tokens} tokens of a run were not counted in its caller's budget: {err}"
                    );
                    state.metrics.count_budget_error("charge");
                }
            });
        }))
    }

    pub fn named(&self, name: &str) -> Result<Arc<Agent>, NoAgent> {
        // Echoed in the 404: an identifier like any other.
        if name.len() > MAX_ID_BYTES {
            return Err(NoAgent::NameTooLong);
        }
        self.agents
            .get(name)
            .cloned()
            .ok_or_else(|| NoAgent::Unknown(name.to_owned()))
    }

    /// The default agent, or why there is none, naming the route to use
    /// instead (`instead` is the path below `/v1/agents/{name}/`).
    pub fn default_agent(&self, instead: &str) -> Result<Arc<Agent>, NoAgent> {
        self.config
            .default_agent
            .as_ref()
            .and_then(|name| self.agents.get(name))
            .cloned()
            .ok_or_else(|| NoAgent::NoDefault {
                instead: instead.to_owned(),
            })
    }
}

/// The agents served, by name.
type Agents = BTreeMap<String, Arc<Agent>>;

/// The agents of `config` (reusing those `kept` gives), and the
/// gateway's card signer.
fn agents_of(
    config: &Config,
    kept: impl Fn(&str) -> Option<Arc<Agent>>,
) -> Result<(Agents, Option<Signer>), StartError> {
    let keys = config
        .card_signing
        .load()
        .map_err(StartError::CardSigning)?;
    let trusted = keys.trusted.map(Arc::new);
    let mut agents = BTreeMap::new();
    for agent in &config.agents {
        let agent = match kept(&agent.name) {
            Some(kept) => kept,
            None => Arc::new(build_agent(agent, config, trusted.clone())?),
        };
        agents.insert(agent.name().to_owned(), agent);
    }
    Ok((agents, keys.signer))
}

/// One configured agent, its `headers_env` read from the environment.
fn build_agent(
    agent: &AgentConfig,
    config: &Config,
    trusted: Option<Arc<TrustedKeys>>,
) -> Result<Agent, StartError> {
    let mut agent = agent.clone();
    for (header, variable) in std::mem::take(&mut agent.headers_env) {
        let value = std::env::var(&variable)
            .ok()
            .filter(|v| axum::http::HeaderValue::from_str(v).is_ok())
            .ok_or_else(|| StartError::HeaderEnv {
                agent: agent.name.clone(),
                header: header.clone(),
                variable: variable.clone(),
            })?;
        agent.headers.push((header, value));
    }
    Ok(Agent::new(
        agent,
        &config.gateway_id,
        &config.limits,
        trusted,
    )?)
}

/// An agent's series, at 0 from when it is served.
fn count_agent(metrics: &Metrics, name: &str, agent: &Agent) {
    metrics.register_agent(name);
    if let Some(credentials) = &agent.credentials {
        credentials.count_into(metrics.token_counters(name));
    }
}

fn authenticator(config: &Config) -> Result<Option<Arc<Authenticator>>, AuthSetupError> {
    let limits = FetchLimits {
        timeout: config.limits.card_timeout,
        max_bytes: config.limits.max_card_bytes,
    };
    Ok(Authenticator::load(&config.auth, limits)?.map(Arc::new))
}

/// A URL without its password, for messages.
/// No place for one more stream: `max` are open.
#[derive(Debug, thiserror::Error)]
#[error("{max} streams are open, the configured maximum")]
pub struct StreamsFull {
    pub max: usize,
}

/// Why a request has no agent.
#[derive(Debug, thiserror::Error)]
pub enum NoAgent {
    /// The name is longer than any identifier the gateway echoes
    /// (`MAX_ID_BYTES`).
    #[error("the agent name is longer than {MAX_ID_BYTES} bytes")]
    NameTooLong,
    #[error("no agent named {0:?}")]
    Unknown(String),
    /// No default agent is configured; `instead` is the path below
    /// `/v1/agents/{name}/` that names one.
    #[error("no default agent: use /v1/agents/{{name}}/{instead}")]
    NoDefault { instead: String },
}

/// Shutdown signals shared by every stream: `unready` when SIGTERM came
/// (`/readyz` says 503, requests are still served while balancers drop
/// the pod), `draining` after `drain_delay` (new requests are refused,
/// streams go on), `stop` when no stream is left or the grace period is
/// over (streams end with RUN_ERROR).
#[derive(Clone, Default)]
pub struct Shutdown {
    pub unready: CancellationToken,
    pub draining: CancellationToken,
    pub stop: CancellationToken,
    /// Requests admitted and not answered yet (their streams, once they
    /// have one, hold a stream permit instead): a drain waits for both.
    pub unanswered: UnansweredRequests,
}

/// A count of the requests admitted whose answer has not started, for the
/// drain.
#[derive(Clone, Default)]
pub struct UnansweredRequests(Arc<std::sync::atomic::AtomicUsize>);

impl UnansweredRequests {
    /// Counts one request until the guard is dropped.
    pub fn enter(&self) -> Unanswered {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Unanswered(self.0.clone())
    }

    pub fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// One request counted in `UnansweredRequests` while it lives.
pub struct Unanswered(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Unanswered {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What this replica remembers of an AG-UI thread (per agent and caller):
/// the task left waiting, for clients that do not send message metadata
/// back (before 1.0) or whose last message carries none (a tool call); the
/// calls of the client's tools the last run ended on; and what was already
/// sent upstream (message ids, answered interrupts), so that nothing is
/// sent twice. Ids are kept as keyed 64-bit digests: a client's ids may be
/// long, the memory stays small.
#[derive(Debug, Clone, Default)]
pub struct ThreadMemory {
    pub waiting_task: Option<String>,
    pending_calls: Vec<u64>,
    sent: VecDeque<u64>,
}

/// Digests remembered per thread. The new input lies after the agent's
/// last message, so only the latest few ever matter.
const MAX_SENT_PER_THREAD: usize = 256;
/// A task id longer than this is not remembered (an agent's ids are short).
const MAX_TASK_ID_BYTES: usize = 256;

/// What a remembered id stands for: the same text in two roles differs.
#[derive(Hash)]
enum Remembered<'a> {
    Message(&'a str),
    Interrupt(&'a str),
    Call(&'a str),
}

fn digest(value: &impl std::hash::Hash) -> u64 {
    use std::hash::BuildHasher;
    // Keyed once per process: a client cannot make two ids collide.
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(Default::default).hash_one(value)
}

impl ThreadMemory {
    #[cfg(test)]
    pub fn waiting(mut self, task: &str) -> ThreadMemory {
        self.waiting_task = Some(task.to_owned());
        self
    }

    pub fn was_sent(&self, message_id: &str) -> bool {
        self.sent
            .contains(&digest(&Remembered::Message(message_id)))
    }

    pub fn was_answered(&self, interrupt_id: &str) -> bool {
        self.sent
            .contains(&digest(&Remembered::Interrupt(interrupt_id)))
    }

    /// The last run ended on this call of a client tool.
    pub fn is_pending_call(&self, call_id: &str) -> bool {
        self.pending_calls
            .contains(&digest(&Remembered::Call(call_id)))
    }

    pub fn remember_sent(&mut self, messages: &[String], interrupts: &[String]) {
        // Only the last few can stay remembered: a request naming 100,000
        // ids must not cost 100,000 searches of the list under its lock.
        let last = |ids: &'_ [String]| -> usize { ids.len().saturating_sub(MAX_SENT_PER_THREAD) };
        let (messages, interrupts) = (&messages[last(messages)..], &interrupts[last(interrupts)..]);
        let digests = messages
            .iter()
            .map(|id| digest(&Remembered::Message(id)))
            .chain(
                interrupts
                    .iter()
                    .map(|id| digest(&Remembered::Interrupt(id))),
            );
        for digest in digests {
            if !self.sent.contains(&digest) {
                self.sent.push_back(digest);
            }
        }
        while self.sent.len() > MAX_SENT_PER_THREAD {
            self.sent.pop_front();
        }
    }

    fn is_empty(&self) -> bool {
        self.waiting_task.is_none() && self.pending_calls.is_empty() && self.sent.is_empty()
    }
}

/// Every thread's memory, bounded: past `MAX_THREADS` the thread
/// remembered first is forgotten first.
#[derive(Default)]
pub struct Threads {
    threads: Mutex<(HashMap<ThreadRef, ThreadMemory>, VecDeque<ThreadRef>)>,
}

/// Bounds the memory a stream of abandoned threads can take (about 2 KiB
/// each at most).
const MAX_THREADS: usize = 10_000;

impl Threads {
    pub fn get(&self, thread: ThreadRef) -> ThreadMemory {
        self.threads
            .lock()
            .ok()
            .and_then(|guard| guard.0.get(&thread).cloned())
            .unwrap_or_default()
    }

    #[cfg(test)]
    pub fn restore(&self, thread: ThreadRef, memory: ThreadMemory) {
        self.update(thread, |slot| *slot = memory);
    }

    /// The agent took the run's input.
    pub fn sent(&self, thread: ThreadRef, messages: &[String], interrupts: &[String]) {
        if !messages.is_empty() || !interrupts.is_empty() {
            self.update(thread, |memory| memory.remember_sent(messages, interrupts));
        }
    }

    /// The run ended with `task` waiting for the client (or not), on these
    /// calls of the client's tools.
    pub fn ended(&self, thread: ThreadRef, task: Option<&str>, pending_calls: &[String]) {
        self.update(thread, |memory| {
            memory.waiting_task = task
                .filter(|t| t.len() <= MAX_TASK_ID_BYTES)
                .map(str::to_owned);
            memory.pending_calls = pending_calls
                .iter()
                .take(MAX_SENT_PER_THREAD)
                .map(|id| digest(&Remembered::Call(id)))
                .collect();
        });
    }

    fn update(&self, thread: ThreadRef, change: impl FnOnce(&mut ThreadMemory)) {
        let Ok(mut guard) = self.threads.lock() else {
            return;
        };
        let (map, order) = &mut *guard;
        if let Some(memory) = map.get_mut(&thread) {
            change(memory);
            return;
        }
        let mut memory = ThreadMemory::default();
        change(&mut memory);
        // Nothing to remember: no entry (a caller cycling thread ids must
        // not push others' threads out for nothing).
        if memory.is_empty() {
            return;
        }
        map.insert(thread, memory);
        order.push_back(thread);
        while order.len() > MAX_THREADS {
            if let Some(oldest) = order.pop_front() {
                map.remove(&oldest);
            }
        }
    }
}
