//! What every request shares: the configuration, the agents, the metrics,
//! the shutdown signals, the stream cap and the memory of waiting tasks.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use a2a_agui::ErrorCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthSetupError, Authenticator};
use crate::config::Config;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::upstream::Agent;

pub struct AppState {
    /// One permit per open stream, held by the stream's body.
    streams: Arc<Semaphore>,
    pub config: Config,
    pub agents: BTreeMap<String, Arc<Agent>>,
    /// `None` when authentication is off.
    pub auth: Option<Authenticator>,
    pub rate_limit: Option<RateLimiter>,
    pub metrics: Arc<Metrics>,
    pub shutdown: Shutdown,
    pub threads: Threads,
}

pub type SharedState = Arc<AppState>;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("gateway could not build its HTTP client: {0}")]
    Http(#[from] reqwest::Error),
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
}

impl AppState {
    pub fn new(config: Config, shutdown: Shutdown) -> Result<AppState, StartError> {
        let mut agents = BTreeMap::new();
        for agent in &config.agents {
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
            let agent = Agent::new(agent, &config.gateway_id, &config.limits)?;
            agents.insert(agent.name().to_owned(), Arc::new(agent));
        }
        Ok(AppState {
            streams: Arc::new(Semaphore::new(config.limits.max_streams)),
            auth: Authenticator::load(&config.auth, &config.limits)?,
            rate_limit: config.rate_limit.map(RateLimiter::new),
            config,
            agents,
            metrics: Arc::new(Metrics::default()),
            shutdown,
            threads: Threads::default(),
        })
    }

    /// A place for one more stream. Refused at once rather than
    /// queued: a client waiting on a full gateway would hold its socket
    /// with nothing to show, while a 503 lets a balancer try elsewhere.
    pub fn stream_permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.streams.clone().try_acquire_owned().map_err(|_| {
            let code = ErrorCode::GatewayBusy;
            self.metrics.count_error(code.as_str());
            ApiError::unavailable(
                code,
                format!(
                    "{} streams are open, the configured maximum",
                    self.config.limits.max_streams
                ),
            )
        })
    }

    pub fn named(&self, name: &str) -> Result<Arc<Agent>, ApiError> {
        self.agents.get(name).cloned().ok_or_else(|| {
            ApiError::not_found(ErrorCode::UnknownAgent, format!("no agent named {name:?}"))
        })
    }

    /// The default agent, or a 404 naming the route to use instead
    /// (`instead` is the path below `/v1/agents/{name}/`).
    pub fn default_agent(&self, instead: &str) -> Result<Arc<Agent>, ApiError> {
        self.config
            .default_agent
            .as_ref()
            .and_then(|name| self.agents.get(name))
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found(
                    ErrorCode::NoDefaultAgent,
                    format!("no default agent: use /v1/agents/{{name}}/{instead}"),
                )
            })
    }
}

/// Shutdown signals shared by every stream: `draining` when SIGTERM came
/// (new requests are refused, streams go on), `stop` when the grace period
/// is over (streams end with RUN_ERROR).
#[derive(Clone, Default)]
pub struct Shutdown {
    pub draining: CancellationToken,
    pub stop: CancellationToken,
}

/// What this replica remembers of an AG-UI thread (per agent and
/// caller): the task left waiting, for clients that do not send message
/// metadata back (before 1.0) or whose last message carries none (a tool
/// call); and the ids of the client messages already sent upstream, so
/// that none is sent twice.
#[derive(Debug, Clone, Default)]
pub struct ThreadMemory {
    pub waiting_task: Option<String>,
    sent: VecDeque<String>,
}

/// Message ids remembered per thread. The new input lies after the agent's
/// last message, so only the latest few ever matter.
const MAX_SENT_PER_THREAD: usize = 256;

impl ThreadMemory {
    #[cfg(test)]
    pub fn waiting(mut self, task: &str) -> ThreadMemory {
        self.waiting_task = Some(task.to_owned());
        self
    }

    pub fn was_sent(&self, id: &str) -> bool {
        self.sent.iter().any(|sent| sent == id)
    }

    pub fn remember_sent(&mut self, ids: &[String]) {
        for id in ids {
            if !self.was_sent(id) {
                self.sent.push_back(id.clone());
            }
        }
        while self.sent.len() > MAX_SENT_PER_THREAD {
            self.sent.pop_front();
        }
    }
}

/// Every thread's memory, bounded: past `MAX_THREADS` the thread used
/// least recently is forgotten.
#[derive(Default)]
pub struct Threads {
    threads: Mutex<(HashMap<String, ThreadMemory>, VecDeque<String>)>,
}

/// Bounds the memory a stream of abandoned threads can take.
const MAX_THREADS: usize = 10_000;

impl Threads {
    pub fn get(&self, thread: &str) -> ThreadMemory {
        self.threads
            .lock()
            .ok()
            .and_then(|guard| guard.0.get(thread).cloned())
            .unwrap_or_default()
    }

    /// The run's input reached the agent.
    pub fn sent(&self, thread: &str, ids: &[String]) {
        if !ids.is_empty() {
            self.update(thread, |memory| memory.remember_sent(ids));
        }
    }

    /// The run ended with `task` waiting for the client (or not).
    pub fn set_waiting(&self, thread: &str, task: Option<&str>) {
        self.update(thread, |memory| {
            memory.waiting_task = task.map(str::to_owned)
        });
    }

    fn update(&self, thread: &str, change: impl FnOnce(&mut ThreadMemory)) {
        let Ok(mut guard) = self.threads.lock() else {
            return;
        };
        let (map, order) = &mut *guard;
        match map.get_mut(thread) {
            Some(memory) => {
                change(memory);
                // Most recently used last: the front is forgotten first.
                if let Some(at) = order.iter().position(|t| t == thread) {
                    order.remove(at);
                }
                order.push_back(thread.to_owned());
            }
            None => {
                let mut memory = ThreadMemory::default();
                change(&mut memory);
                map.insert(thread.to_owned(), memory);
                order.push_back(thread.to_owned());
            }
        }
        while order.len() > MAX_THREADS {
            if let Some(oldest) = order.pop_front() {
                map.remove(&oldest);
            }
        }
    }
}
