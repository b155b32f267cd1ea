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
    pub waiting: WaitingTasks,
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
            waiting: WaitingTasks::default(),
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

/// A task left waiting for input, by AG-UI thread: the fallback for
/// clients that do not send message metadata back (before 1.0).
#[derive(Default)]
pub struct WaitingTasks {
    tasks: Mutex<(HashMap<String, String>, VecDeque<String>)>,
}

/// Bounds the memory a stream of abandoned threads can take; the oldest
/// entry goes first.
const MAX_WAITING_TASKS: usize = 10_000;

impl WaitingTasks {
    pub fn set(&self, thread: &str, task: Option<&str>) {
        let Ok(mut guard) = self.tasks.lock() else {
            return;
        };
        let (map, order) = &mut *guard;
        match task {
            Some(task) => {
                if map.insert(thread.to_owned(), task.to_owned()).is_none() {
                    order.push_back(thread.to_owned());
                }
                while order.len() > MAX_WAITING_TASKS {
                    if let Some(oldest) = order.pop_front() {
                        map.remove(&oldest);
                    }
                }
            }
            None => {
                map.remove(thread);
            }
        }
    }

    pub fn get(&self, thread: &str) -> Option<String> {
        self.tasks.lock().ok()?.0.get(thread).cloned()
    }
}
