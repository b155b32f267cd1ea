//! Prometheus metrics on the `prometheus` crate: its registry, text
//! encoder and process collector (CPU, memory, file descriptors, threads,
//! start time). Per-agent series carry an `agent` label.
//!
//! The hot path stays lock-free: a stream resolves its agent's event
//! counters once (`Metrics::stream_started`) and counts each event with
//! one atomic add.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_agui::Event;
use agui_edge::listener::ConnectionCounts;
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// Upper bounds of the latency and duration buckets, in seconds: from a
/// millisecond (a local agent's headers) to ten minutes (a long run).
const BUCKETS: [f64; 17] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0,
];

/// Distinct error codes kept as labels; more (an upstream inventing codes)
/// count as `other`, so the series stay bounded.
const MAX_ERROR_CODES: usize = 256;

/// The label of requests that name no agent (`/v1/agents`).
pub const NO_AGENT: &str = "";

/// What an error code that cannot be a label becomes.
const OTHER_CODE: &str = "other";
/// How many model names label token counts; the agent names them, so
/// past this (or for a name that is long or odd) the label is `other`.
const MAX_MODELS: usize = 64;
const MAX_MODEL_LEN: usize = 64;

/// The longest error code kept as it is.
const MAX_CODE_LEN: usize = 64;

/// What kind of call a request became: the access log's `mode` and the
/// `route` label of `agui_gateway_requests_total`, one vocabulary for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `POST /agui`: an AG-UI run.
    Agui,
    /// An A2A call whose answer was converted (negotiated).
    Converted,
    /// An A2A call passed through untouched.
    Passthrough,
    /// `/agui/connect`: a run replayed and followed.
    Connect,
    /// `/agui/stop`.
    Stop,
    /// The agent's card, as the gateway serves it.
    Card,
    /// An inspector run: AG-UI with the upstream events tapped in.
    Inspect,
    /// `GET /v1/agents`: the agents this caller may use.
    Agents,
    /// The CopilotKit runtime protocol (`/copilotkit/…`).
    CopilotKit,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Agui => "agui",
            Mode::Converted => "converted",
            Mode::Passthrough => "passthrough",
            Mode::Connect => "connect",
            Mode::Stop => "stop",
            Mode::Card => "card",
            Mode::Inspect => "inspect",
            Mode::Agents => "agents",
            Mode::CopilotKit => "copilotkit",
        }
    }
}

/// An error code as labels, logs and spans may carry it: an agent's code
/// is its text, so one that is long or holds anything but `A-Z`, `0-9`
/// and `_` is `other`.
pub fn bounded_code(code: &str) -> &str {
    let plain = !code.is_empty()
        && code.len() <= MAX_CODE_LEN
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if plain { code } else { OTHER_CODE }
}

fn is_own_code(code: &str) -> bool {
    a2a_agui::ErrorCode::ALL
        .iter()
        .any(|own| own.as_str() == code)
}

pub struct Metrics {
    registry: Registry,
    agent_up: IntGaugeVec,
    active_streams: IntGaugeVec,
    events: IntCounterVec,
    errors: IntCounterVec,
    error_codes: Mutex<BTreeSet<String>>,
    tokens: IntCounterVec,
    models: Mutex<BTreeSet<String>>,
    requests: IntCounterVec,
    upstream_latency: HistogramVec,
    stream_duration: HistogramVec,
    open_connections: IntGauge,
    refused_connections: IntCounter,
    detached_runs: IntCounter,
    resumed_streams: IntCounter,
    reattached_streams: IntCounter,
    journal_runs: IntGauge,
    journal_bytes: IntGauge,
    token_requests: IntCounterVec,
    card_signature: IntGaugeVec,
    budget_refusals: IntCounterVec,
    budget_errors: IntCounterVec,
    config_reloads: IntCounterVec,
    /// Each agent's event counters, resolved once.
    streams: Mutex<HashMap<String, Arc<StreamMetrics>>>,
}

/// One agent's token requests, by outcome.
#[derive(Clone)]
pub struct TokenCounters {
    pub ok: IntCounter,
    pub failed: IntCounter,
}

/// One agent's per-stream series, resolved from their vectors once.
pub struct StreamMetrics {
    /// Indexed by `Event::kind_index`.
    events: Vec<IntCounter>,
    active: IntGauge,
    duration: Histogram,
}

impl StreamMetrics {
    pub fn count_event(&self, event: &Event) {
        if let Some(counter) = self.events.get(event.kind_index()) {
            counter.inc();
        }
    }
}

/// Counts one open AG-UI stream for as long as it lives, and observes its
/// duration when it ends.
pub struct ActiveStream {
    metrics: Arc<StreamMetrics>,
    started: Instant,
}

impl ActiveStream {
    pub fn metrics(&self) -> &StreamMetrics {
        &self.metrics
    }
}

impl Drop for ActiveStream {
    fn drop(&mut self) {
        self.metrics.active.dec();
        self.metrics
            .duration
            .observe(self.started.elapsed().as_secs_f64());
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let metric = IntCounter::new(name, help).unwrap_or_else(|_| unreachable_metric(name));
    register(registry, &metric);
    metric
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let metric = IntGauge::new(name, help).unwrap_or_else(|_| unreachable_metric(name));
    register(registry, &metric);
    metric
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let metric = IntCounterVec::new(Opts::new(name, help), labels)
        .unwrap_or_else(|_| unreachable_metric(name));
    register(registry, &metric);
    metric
}

fn gauge_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let metric = IntGaugeVec::new(Opts::new(name, help), labels)
        .unwrap_or_else(|_| unreachable_metric(name));
    register(registry, &metric);
    metric
}

fn histogram_vec(registry: &Registry, name: &str, help: &str) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(BUCKETS.to_vec());
    let metric = HistogramVec::new(opts, &["agent"]).unwrap_or_else(|_| unreachable_metric(name));
    register(registry, &metric);
    metric
}

/// The names and labels above are constants that the tests render: a bad
/// one is a programming error caught on the first test run.
#[expect(
    clippy::panic,
    reason = "constant metric definitions, checked by tests"
)]
fn unreachable_metric(name: &str) -> ! {
    panic!("metric {name} is defined wrongly")
}

fn register<C: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: &C) {
    if let Err(err) = registry.register(Box::new(metric.clone())) {
        tracing::error!("gateway could not register a metric: {err}");
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        if let Err(err) = registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        )) {
            tracing::error!("gateway could not register the process metrics: {err}");
        }
        let r = &registry;
        Metrics {
            agent_up: gauge_vec(
                r,
                "agui_gateway_agent_up",
                "Whether the agent's card was fetched at the last try (1) or not (0).",
                &["agent"],
            ),
            active_streams: gauge_vec(
                r,
                "agui_gateway_active_streams",
                "AG-UI streams open now.",
                &["agent"],
            ),
            events: counter_vec(
                r,
                "agui_gateway_events_total",
                "AG-UI events sent, by type.",
                &["agent", "type"],
            ),
            errors: counter_vec(
                r,
                "agui_gateway_errors_total",
                "Runs and requests that ended in error, by code.",
                &["agent", "kind"],
            ),
            error_codes: Mutex::new(BTreeSet::new()),
            tokens: counter_vec(
                r,
                "agui_gateway_tokens_total",
                "Tokens the agents reported using, in AG-UI's accounting: reasoning is part of output, cached and cache-write input part of input.",
                &["agent", "model", "kind"],
            ),
            models: Mutex::new(BTreeSet::new()),
            requests: counter_vec(
                r,
                "agui_gateway_requests_total",
                "Requests, by route.",
                &["agent", "route"],
            ),
            upstream_latency: histogram_vec(
                r,
                "agui_gateway_upstream_latency_seconds",
                "Time to the upstream's response headers.",
            ),
            stream_duration: histogram_vec(
                r,
                "agui_gateway_stream_duration_seconds",
                "How long converted streams lasted, from the upstream call to their end.",
            ),
            open_connections: gauge(
                r,
                "agui_gateway_open_connections",
                "Client connections open now.",
            ),
            refused_connections: counter(
                r,
                "agui_gateway_refused_connections_total",
                "Connections refused at max_connections.",
            ),
            detached_runs: counter(
                r,
                "agui_gateway_detached_runs_total",
                "Runs that went on, journaled, after their client went away.",
            ),
            resumed_streams: counter(
                r,
                "agui_gateway_resumed_streams_total",
                "Streams that continued a journaled run (Last-Event-ID or connect).",
            ),
            reattached_streams: counter(
                r,
                "agui_gateway_upstream_reattached_total",
                "Broken upstream streams replaced by a resubscription to the task.",
            ),
            journal_runs: gauge(r, "agui_gateway_journal_runs", "Runs the journal keeps."),
            journal_bytes: gauge(
                r,
                "agui_gateway_journal_bytes",
                "Frame bytes the journal keeps.",
            ),
            token_requests: counter_vec(
                r,
                "agui_gateway_upstream_token_requests_total",
                "Requests to an agent's token endpoint ([agents.NAME.auth]), by result (ok, error).",
                &["agent", "result"],
            ),
            card_signature: gauge_vec(
                r,
                "agui_gateway_card_signature",
                "1 for what the agent card's signatures were found to be (verified, unsigned, invalid) at the last fetch, for agents whose card_signatures is verify or require.",
                &["agent", "result"],
            ),
            budget_refusals: counter_vec(
                r,
                "agui_gateway_token_budget_refusals_total",
                "Runs refused before any agent call because their caller's token budget was spent (429 TOKEN_BUDGET_EXCEEDED).",
                &["agent"],
            ),
            budget_errors: counter_vec(
                r,
                "agui_gateway_token_budget_errors_total",
                "Token budget checks (a run went on unchecked) and charges (a run's tokens were not counted) the shared journal (Redis) did not answer, by op (check, charge).",
                &["op"],
            ),
            config_reloads: {
                let reloads = counter_vec(
                    r,
                    "agui_gateway_config_reloads_total",
                    "Configuration reloads (SIGHUP or a change of the --config file), by result: ok (applied) or error (refused; the last good configuration serves on).",
                    &["result"],
                );
                for result in ["ok", "error"] {
                    let _ = reloads.with_label_values(&[result]);
                }
                reloads
            },
            streams: Mutex::new(HashMap::new()),
            registry,
        }
    }

    /// `agent`'s card signature verdict (`None`: no card yet, all 0).
    pub fn set_card_signature(&self, agent: &str, verdict: Option<&str>) {
        for result in ["verified", "unsigned", "invalid"] {
            self.card_signature
                .with_label_values(&[agent, result])
                .set(i64::from(verdict == Some(result)));
        }
    }

    /// An agent's token request counters, at 0 from the start.
    pub fn token_counters(&self, agent: &str) -> TokenCounters {
        TokenCounters {
            ok: self.token_requests.with_label_values(&[agent, "ok"]),
            failed: self.token_requests.with_label_values(&[agent, "error"]),
        }
    }

    /// A run of `agent` was refused: its caller's token budget is spent.
    pub fn count_budget_refusal(&self, agent: &str) {
        self.budget_refusals.with_label_values(&[agent]).inc();
    }

    /// Redis did not answer a token budget's `op` (`check`, `charge`).
    pub fn count_budget_error(&self, op: &'static str) {
        self.budget_errors.with_label_values(&[op]).inc();
    }

    /// A configuration reload was applied (`ok`) or refused (`error`);
    /// both series exist from the start, at 0.
    pub fn count_reload(&self, applied: bool) {
        let result = if applied { "ok" } else { "error" };
        self.config_reloads.with_label_values(&[result]).inc();
    }

    /// A run whose client went away went on, journaled, for a reconnect.
    pub fn count_detached(&self) {
        self.detached_runs.inc();
    }

    /// A client continued a journaled run (reconnect or connect).
    pub fn count_resumed(&self) {
        self.resumed_streams.inc();
    }

    /// A broken upstream stream was replaced by a resubscription.
    pub fn count_reattached(&self) {
        self.reattached_streams.inc();
    }

    /// An agent's per-stream series exist from the start (at 0): a fresh
    /// replica shows `agui_gateway_active_streams{agent} 0`, not nothing.
    pub fn register_agent(&self, agent: &str) {
        let _ = self.stream_metrics(agent);
    }

    /// `agent` is no longer served (a reload removed it): its
    /// `agent_up` goes, so that it does not read as up; its counters stay.
    pub fn forget_agent(&self, agent: &str) {
        let _ = self.agent_up.remove_label_values(&[agent]);
    }

    /// A converted stream of `agent` opens: its series, resolved once.
    pub fn stream_started(&self, agent: &str) -> ActiveStream {
        let metrics = self.stream_metrics(agent);
        metrics.active.inc();
        ActiveStream {
            metrics,
            started: Instant::now(),
        }
    }

    fn stream_metrics(&self, agent: &str) -> Arc<StreamMetrics> {
        let Ok(mut streams) = self.streams.lock() else {
            return Arc::new(self.resolve(agent));
        };
        streams
            .entry(agent.to_owned())
            .or_insert_with(|| Arc::new(self.resolve(agent)))
            .clone()
    }

    fn resolve(&self, agent: &str) -> StreamMetrics {
        StreamMetrics {
            events: Event::TYPE_NAMES
                .iter()
                .map(|kind| self.events.with_label_values(&[agent, kind]))
                .collect(),
            active: self.active_streams.with_label_values(&[agent]),
            duration: self.stream_duration.with_label_values(&[agent]),
        }
    }

    /// Open streams, all agents together.
    pub fn active_streams(&self) -> i64 {
        self.streams
            .lock()
            .map_or(0, |streams| streams.values().map(|m| m.active.get()).sum())
    }

    /// A run or request of `agent` ended in error `code`. The gateway's own
    /// codes always count as themselves; an agent's (`A2A_<reason>`) only
    /// while they are short, plain and fewer than `MAX_ERROR_CODES`.
    pub fn count_error(&self, agent: &str, code: &str) {
        let code = bounded_code(code);
        let known = is_own_code(code)
            || self.error_codes.lock().is_ok_and(|mut codes| {
                codes.contains(code)
                    || (codes.len() < MAX_ERROR_CODES && codes.insert(code.to_owned()))
            });
        let code = if known { code } else { OTHER_CODE };
        self.errors.with_label_values(&[agent, code]).inc();
    }

    /// A run's usage, per model and kind of token.
    pub fn count_tokens(&self, agent: &str, usage: &[a2a_agui::TokenUsage]) {
        for entry in usage {
            let model = self.model_label(entry.model.as_deref());
            let kinds = [
                ("input", entry.input_tokens),
                ("output", entry.output_tokens),
                ("reasoning", entry.reasoning_tokens),
                ("cached_input", entry.cached_input_tokens),
                ("cache_write_input", entry.cache_write_input_tokens),
            ];
            for (kind, count) in kinds {
                if let Some(count) = count.filter(|c| *c > 0) {
                    self.tokens
                        .with_label_values(&[agent, model, kind])
                        .inc_by(count);
                }
            }
        }
    }

    /// A model name as a label: `unknown` when none was reported, `other`
    /// when it is long, holds anything unusual, or is one too many.
    fn model_label<'a>(&self, model: Option<&'a str>) -> &'a str {
        let Some(model) = model else {
            return "unknown";
        };
        let plain = model.len() <= MAX_MODEL_LEN
            && model
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:/@".contains(&b));
        let known = plain
            && self.models.lock().is_ok_and(|mut models| {
                models.contains(model)
                    || (models.len() < MAX_MODELS && models.insert(model.to_owned()))
            });
        if known { model } else { OTHER_CODE }
    }

    pub fn count_request(&self, agent: &str, mode: Mode) {
        self.requests
            .with_label_values(&[agent, mode.as_str()])
            .inc();
    }

    pub fn observe_upstream_latency(&self, agent: &str, elapsed: Duration) {
        self.upstream_latency
            .with_label_values(&[agent])
            .observe(elapsed.as_secs_f64());
    }

    /// The exposition text. `journal`: the embedded journal's runs and
    /// bytes, when it is on; `agents_up`: each agent's card state (from
    /// the background refresh: a scrape calls no upstream).
    pub fn render(&self, journal: Option<(usize, usize)>, agents_up: &[(&str, bool)]) -> String {
        for (agent, up) in agents_up {
            self.agent_up
                .with_label_values(&[*agent])
                .set(i64::from(*up));
        }
        let (runs, bytes) = journal.unwrap_or_default();
        self.journal_runs
            .set(i64::try_from(runs).unwrap_or(i64::MAX));
        self.journal_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        let families = self.registry.gather();
        TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_else(|err| {
                tracing::error!("gateway could not encode its metrics: {err}");
                String::new()
            })
    }
}

/// The listener's connection counts.
impl ConnectionCounts for Metrics {
    /// A client connection over `max_connections`, answered 503 and closed.
    fn refused_connection(&self) {
        self.refused_connections.inc();
    }

    fn open_connections(&self, delta: i64) {
        self.open_connections.add(delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_carry_the_agent_and_buckets_reach_ten_minutes() {
        let metrics = Metrics::new();
        {
            let stream = metrics.stream_started("weather");
            stream.metrics().count_event(&Event::RunStarted {
                thread_id: "t".into(),
                run_id: "r".into(),
            });
            assert_eq!(metrics.active_streams(), 1);
        }
        assert_eq!(metrics.active_streams(), 0);
        metrics.count_request("weather", Mode::Agui);
        metrics.count_error("weather", "UPSTREAM_TIMEOUT");
        metrics.observe_upstream_latency("weather", Duration::from_secs(400));
        let text = metrics.render(None, &[("weather", true)]);
        for line in [
            "agui_gateway_agent_up{agent=\"weather\"} 1",
            "agui_gateway_events_total{agent=\"weather\",type=\"RUN_STARTED\"} 1",
            "agui_gateway_requests_total{agent=\"weather\",route=\"agui\"} 1",
            "agui_gateway_errors_total{agent=\"weather\",kind=\"UPSTREAM_TIMEOUT\"} 1",
            "agui_gateway_upstream_latency_seconds_bucket{agent=\"weather\",le=\"600\"} 1",
            "agui_gateway_upstream_latency_seconds_bucket{agent=\"weather\",le=\"300\"} 0",
            "agui_gateway_stream_duration_seconds_count{agent=\"weather\"} 1",
            "agui_gateway_active_streams{agent=\"weather\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        #[cfg(target_os = "linux")]
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
    }

    #[test]
    fn error_codes_an_upstream_invents_stay_bounded() {
        let metrics = Metrics::new();
        for n in 0..MAX_ERROR_CODES + 50 {
            metrics.count_error("a", &format!("CODE_{n}"));
        }
        // The gateway's own codes still count as themselves.
        metrics.count_error("a", "GATEWAY_BUSY");
        metrics.count_error("a", &"X".repeat(1000));
        metrics.count_error("a", "A2A_<script>");
        let text = metrics.render(None, &[]);
        let series = text
            .lines()
            .filter(|l| l.starts_with("agui_gateway_errors_total{"))
            .count();
        assert_eq!(series, MAX_ERROR_CODES + 2, "{text}");
        assert!(text.contains("kind=\"other\"} 52"), "{text}");
        assert!(text.contains("kind=\"GATEWAY_BUSY\"} 1"), "{text}");
    }
}
