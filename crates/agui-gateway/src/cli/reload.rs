//! Configuration reloads: on SIGHUP, and when the `--config` file's
//! contents change. The file is read through its path every second rather
//! than watched: a Kubernetes ConfigMap update swaps a `..data` symlink
//! in the mounted directory, which a watch on the path itself never sees.
//!
//! A reload reads the configuration as the start did (the file, the
//! environment, then the flags, which keep winning), and refuses what
//! `check-config` refuses: the last good configuration serves on. New
//! requests go to the routes of the state serving when they came; a
//! request or run in flight holds the state it started with.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use agui_gateway::config::Config;
use agui_gateway::config::flags::FlagError;
use agui_gateway::config::reload::settle;
use agui_gateway::http::router;
use agui_gateway::state::{AppHandle, AppState};
use axum::Router;
use axum::extract::Request;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How the configuration is read again, and the file watched for it.
pub struct Reload {
    pub read: Box<dyn Fn() -> Result<Config, FlagError> + Send + Sync>,
    pub watched: Option<PathBuf>,
    /// The watched file as the start read it (`digest`): a change while
    /// the gateway started is a change.
    pub read_at_start: Option<u64>,
}

/// How often the watched file is read.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What the listeners serve now.
pub struct Live {
    serving: RwLock<Arc<Serving>>,
}

struct Serving {
    state: AppHandle,
    app: Router,
    admin: Router,
}

impl Serving {
    fn of(state: AppHandle) -> Arc<Serving> {
        Arc::new(Serving {
            app: router::router(state.clone()),
            admin: router::admin_router(state.clone()),
            state,
        })
    }
}

impl Live {
    pub fn new(state: AppHandle) -> Arc<Live> {
        Arc::new(Live {
            serving: RwLock::new(Serving::of(state)),
        })
    }

    fn now(&self) -> Arc<Serving> {
        self.serving
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn state(&self) -> AppHandle {
        self.now().state.clone()
    }

    fn swap(&self, state: AppHandle) {
        *self.serving.write().unwrap_or_else(PoisonError::into_inner) = Serving::of(state);
    }

    /// The main listener's routes, the current state's for each request.
    pub fn app(self: &Arc<Self>) -> Router {
        self.dispatch(|serving| serving.app.clone())
    }

    /// The admin listener's.
    pub fn admin(self: &Arc<Self>) -> Router {
        self.dispatch(|serving| serving.admin.clone())
    }

    fn dispatch(self: &Arc<Self>, pick: fn(&Serving) -> Router) -> Router {
        let live = self.clone();
        Router::new().fallback_service(tower::service_fn(move |request: Request| {
            let routes = pick(&live.now());
            async move { routes.oneshot(request).await }
        }))
    }
}

/// The background work of a state's parts: each agent's card refresh and
/// TLS watch, the rate limiter's cleanup, the JWKS warm-up. A part a
/// reload drops or replaces has its work stopped; a part it keeps keeps it.
pub struct Background {
    stop: CancellationToken,
    agents: BTreeMap<String, CancellationToken>,
    limiter: Option<CancellationToken>,
}

impl Background {
    pub fn start(state: &AppHandle, stop: CancellationToken) -> Background {
        let mut background = Background {
            stop,
            agents: BTreeMap::new(),
            limiter: None,
        };
        background.follow(None, state);
        background
    }

    fn follow(&mut self, old: Option<&AppState>, new: &AppHandle) {
        for (name, agent) in &new.agents {
            let kept = old
                .and_then(|old| old.agents.get(name))
                .is_some_and(|was| Arc::ptr_eq(was, agent));
            if kept {
                continue;
            }
            let stop = self.stop.child_token();
            agent.spawn_card_refresh(stop.clone());
            agent.spawn_tls_watch(stop.clone());
            if let Some(before) = self.agents.insert(name.clone(), stop) {
                before.cancel();
            }
        }
        self.agents.retain(|name, stop| {
            let served = new.agents.contains_key(name);
            if !served {
                stop.cancel();
            }
            served
        });
        let old_limiter = old.and_then(|old| old.rate_limit.as_ref());
        if old.is_none() || !same(old_limiter, new.rate_limit.as_ref()) {
            if let Some(before) = self.limiter.take() {
                before.cancel();
            }
            if let Some(limiter) = &new.rate_limit {
                let stop = self.stop.child_token();
                limiter.spawn_cleanup(stop.clone());
                self.limiter = Some(stop);
            }
        }
        let old_auth = old.and_then(|old| old.auth.as_ref());
        if (old.is_none() || !same(old_auth, new.auth.as_ref()))
            && let Some(auth) = new.auth.clone()
        {
            // In the background: an identity provider that is slow to
            // answer must not hold the listener closed, nor a reload.
            tokio::spawn(async move { auth.warm_up().await });
        }
    }
}

/// The same part, or none in both states.
fn same<T>(a: Option<&Arc<T>>, b: Option<&Arc<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Reloads on SIGHUP and on a change of the watched file until `stop`.
pub async fn watch(
    reload: Reload,
    mut hangup: Hangup,
    live: Arc<Live>,
    mut background: Background,
    stop: CancellationToken,
) {
    let mut seen = reload.read_at_start;
    let mut tick = tokio::time::interval(LOOK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let why = tokio::select! {
            () = stop.cancelled() => return,
            () = hangup.next() => "SIGHUP",
            _ = tick.tick() => {
                if reload.watched.is_none() {
                    continue;
                }
                let now = contents(reload.watched.as_ref()).await;
                if now == seen {
                    continue;
                }
                "the file changed"
            }
        };
        // What this reload read is what the next look compares with.
        seen = contents(reload.watched.as_ref()).await;
        apply(&reload, &live, &mut background, why);
    }
}

/// The watched file's contents, as a digest (`None`: unreadable).
async fn contents(path: Option<&PathBuf>) -> Option<u64> {
    Some(hash(&tokio::fs::read(path?).await.ok()?))
}

/// `contents`, before there is a runtime: what the start reads.
pub fn digest(path: Option<&PathBuf>) -> Option<u64> {
    Some(hash(&std::fs::read(path?).ok()?))
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(bytes)
}

fn apply(reload: &Reload, live: &Live, background: &mut Background, why: &str) {
    let old = live.state();
    let refused = |err: &dyn std::fmt::Display| {
        tracing::error!(
            "configuration not reloaded ({why}): {err}; the last good configuration serves on"
        );
        old.metrics.count_reload(false);
    };
    let mut config = match (reload.read)() {
        Ok(config) => config,
        Err(err) => return refused(&err),
    };
    let changes = settle(&old.config, &mut config);
    let new = match old.reloaded(config, &changes) {
        Ok(state) => Arc::new(state),
        Err(err) => return refused(&err),
    };
    live.swap(new.clone());
    background.follow(Some(&old), &new);
    for name in &changes.agents_removed {
        old.metrics.forget_agent(name);
    }
    old.metrics.count_reload(true);
    if !changes.restart.is_empty() {
        tracing::warn!(
            "configuration reloaded ({why}), but this needs a restart: {} (kept as it runs; the rest applies)",
            changes.restart.join(", ")
        );
    }
    let named = [
        ("agents added", changes.agents_added.join(", ")),
        ("agents removed", changes.agents_removed.join(", ")),
        ("agents changed", changes.agents_changed.join(", ")),
        ("applied", changes.applied.join(", ")),
    ];
    let summary: Vec<String> = named
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| format!("{what}: {names}"))
        .collect();
    let summary = if summary.is_empty() {
        "nothing changed".to_owned()
    } else {
        summary.join("; ")
    };
    tracing::info!(
        "configuration reloaded ({why}): {summary}; new requests use it, runs in flight finish on theirs"
    );
}

/// SIGHUP, caught from before the gateway says it listens (its default
/// action ends the process).
pub struct Hangup {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Hangup {
    pub fn install() -> Hangup {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Hangup {
                signal: signal(SignalKind::hangup()).ok(),
            }
        }
        #[cfg(not(unix))]
        Hangup {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = &mut self.signal
            && signal.recv().await.is_some()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}
