//! Serving: the state, the listeners, the banner, and the drain on
//! SIGTERM or Ctrl-C.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use agui_edge::listener;
use agui_edge::listener::{ConnectionLimits, DrainSignals};
use agui_edge::tls::EdgeTls;
use agui_gateway::config::Config;
use agui_gateway::obs::logging::{LogFormat as Log, announce};
use agui_gateway::state::{AppState, Shutdown};
use anyhow::Context;

use super::reload::{Background, Hangup, Live, Reload};

/// What is printed once the gateway listens, from the address it got.
pub type Banner = Box<dyn FnOnce(std::net::SocketAddr) -> String + Send>;

/// Serves until SIGTERM or Ctrl-C: then stops accepting, lets open streams
/// run for the grace period, ends the rest with RUN_ERROR and exits. With
/// `reload`, SIGHUP and a change of the file re-read the configuration.
pub async fn serve(
    config: Config,
    banner: Option<Banner>,
    log: Log,
    reload: Option<Reload>,
) -> anyhow::Result<()> {
    let shutdown = Shutdown::default();
    let timing = Drain {
        grace: config.shutdown_grace,
        delay: config.drain_delay,
    };
    let listen = config.listen;
    let admin_listen = config.admin_listen;
    let tls = match &config.tls {
        Some(files) => Some(Arc::new(
            EdgeTls::new(files).context("gateway cannot serve TLS")?,
        )),
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let limits = ConnectionLimits {
        max_connections: config.limits.max_connections,
        header_read_timeout: config.limits.header_read_timeout,
        write_timeout: config.limits.write_timeout,
        max_request_bytes: config.limits.max_request_bytes,
    };
    warn_if_files_run_short(limits.max_connections);
    let tracing_provider = match &config.otlp_endpoint {
        Some(url) => Some(agui_gateway::obs::telemetry::init(url)?),
        None => None,
    };
    let state = Arc::new(AppState::build(config, shutdown.clone()).await?);
    let background = Background::start(&state, shutdown.stop.clone());
    let live = Live::new(state.clone());
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("gateway cannot listen on {listen}"))?;
    let local = listener
        .local_addr()
        .context("gateway has no local address")?;
    let admin = match admin_listen {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("gateway cannot listen on {address} (admin)"))?,
        ),
        None => None,
    };
    // Tests and scripts wait for this line ("listening on http://…").
    let signals = Signals::install();
    let hangup = reload.as_ref().map(|_| Hangup::install());
    announce(
        log,
        &format!("agui-gateway listening on {scheme}://{local}"),
    );
    if let Some(admin) = &admin
        && let Ok(address) = admin.local_addr()
    {
        announce(
            log,
            &format!("agui-gateway admin (health, readiness, metrics) on http://{address}"),
        );
    }
    if let Some(banner) = banner {
        announce(log, &banner(local));
    }
    let _ = std::io::stdout().flush();
    let idle = {
        let state = state.clone();
        move || state.is_idle()
    };
    tokio::spawn(watch_signals(signals, shutdown.clone(), timing, idle));
    if let (Some(reload), Some(hangup)) = (reload, hangup) {
        let stop = shutdown.stop.clone();
        tokio::spawn(super::reload::watch(
            reload,
            hangup,
            live.clone(),
            background,
            stop,
        ));
    }
    if let Some(admin) = admin {
        // Probes must answer while the main listener is full: a cap of its own.
        let admin_limits = ConnectionLimits {
            max_connections: 256,
            ..limits
        };
        let app = live.admin();
        let metrics = state.metrics.clone();
        // Probes are answered through the drain (readiness says 503).
        let drain = DrainSignals {
            draining: shutdown.stop.clone(),
            stop: shutdown.stop.clone(),
        };
        tokio::spawn(listener::serve(
            admin,
            app,
            admin_limits,
            metrics,
            drain,
            None,
        ));
    }
    let app = live.app();
    if let Some(tls) = &tls {
        tls.clone().spawn_watch(shutdown.stop.clone());
    }
    // The listener stays open through the drain: load balancers see
    // `/readyz` turn 503 and new requests a 503 GATEWAY_DRAINING (with
    // `Connection: close`) while open streams finish; it closes at `stop`.
    let server = listener::serve(
        listener,
        app,
        limits,
        state.metrics.clone(),
        DrainSignals {
            draining: shutdown.draining.clone(),
            stop: shutdown.stop.clone(),
        },
        tls,
    );
    let stop = shutdown.stop.clone();
    tokio::select! {
        () = server => {}
        // Streams end at `stop` and their connections within
        // `AFTER_STOP`; this only backs that up.
        _ = async { stop.cancelled().await; tokio::time::sleep(listener::AFTER_STOP + LAST_SPANS).await } => {
            tracing::warn!("connections still open after the grace period; exiting");
        }
    }
    if let Some(provider) = tracing_provider {
        // The last spans: flushed off the runtime's threads, within what
        // is left of the second after the grace (`main` does not wait
        // for an export still running).
        let flush = tokio::task::spawn_blocking(move || provider.shutdown());
        let _ = tokio::time::timeout(LAST_SPANS, flush).await;
    }
    tracing::info!("gateway stopped");
    Ok(())
}

/// What the last spans' export may take at exit: with `AFTER_STOP`, the
/// gateway is gone within a second of the grace.
const LAST_SPANS: Duration = Duration::from_millis(300);

/// Each connection may need an upstream socket too: a cap the open-file
/// limit cannot honour fails as accept errors instead of clean 503s.
fn warn_if_files_run_short(max_connections: usize) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(soft) = soft
        && 2 * max_connections + 256 > soft
    {
        tracing::warn!(
            open_file_limit = soft,
            max_connections,
            "max_connections is high for the open-file limit: raise the limit (ulimit -n) or lower max_connections below half of it"
        );
    }
}

/// How a SIGTERM or Ctrl-C ends the gateway.
#[derive(Debug, Clone, Copy)]
struct Drain {
    /// Open streams may run on this long (`shutdown_grace_secs`).
    grace: Duration,
    /// Requests are still served (while `/readyz` says 503) this long
    /// (`drain_delay_secs`).
    delay: Duration,
}

/// On the first signal: unready at once (`/readyz` 503, requests still
/// served), draining after `delay` (no new requests), then stop as soon as
/// nothing is in flight or when `grace` is over, whichever comes first. A
/// second Ctrl-C exits at once.
async fn watch_signals(
    mut signals: Signals,
    shutdown: Shutdown,
    drain: Drain,
    idle: impl Fn() -> bool,
) {
    signals.either().await;
    let signalled = tokio::time::Instant::now();
    tracing::info!(
        grace_secs = drain.grace.as_secs(),
        drain_delay_secs = drain.delay.as_secs(),
        "shutting down: no new requests, open streams may finish"
    );
    shutdown.unready.cancel();
    tokio::spawn(async move {
        signals.interrupt().await;
        tracing::warn!("interrupted again: exiting now");
        std::process::exit(130);
    });
    tokio::time::sleep(drain.delay).await;
    shutdown.draining.cancel();
    let deadline = signalled + drain.grace.max(drain.delay);
    // Checked every 50 ms: a stream's end needs no signal of its own, and
    // a drain is not a hot path.
    loop {
        if idle() {
            tracing::info!("no stream open: stopping");
            break;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            tracing::info!("grace period over: ending open streams");
            break;
        }
        tokio::time::sleep((deadline - now).min(Duration::from_millis(50))).await;
    }
    shutdown.stop.cancel();
}

/// SIGTERM and SIGINT, caught from before the gateway says it listens: a
/// signal that came before the handler was in place would kill the process
/// at once, with no drain (a pod stopped right after it started).
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn install() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                term: signal(SignalKind::terminate()).ok(),
                interrupt: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The first SIGTERM or SIGINT.
    async fn either(&mut self) {
        #[cfg(unix)]
        {
            let term = async {
                match &mut self.term {
                    Some(term) => term.recv().await,
                    None => std::future::pending().await,
                }
            };
            let interrupt = async {
                match &mut self.interrupt {
                    Some(interrupt) => interrupt.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = term => {}
                _ = interrupt => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }

    /// The next SIGINT.
    async fn interrupt(mut self) {
        #[cfg(unix)]
        match &mut self.interrupt {
            Some(interrupt) => {
                interrupt.recv().await;
            }
            None => std::future::pending().await,
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
