//! Prometheus metrics, rendered by hand: a gauge, labelled counters and one
//! histogram need no metrics framework.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use a2a_agui::Event;

/// Upper bounds of the upstream latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
pub struct Metrics {
    active_streams: AtomicI64,
    /// Indexed by `Event::kind_index`: counted on every event, so no lock.
    events: [AtomicU64; Event::TYPE_NAMES.len()],
    errors: Mutex<BTreeMap<String, u64>>,
    requests: Mutex<BTreeMap<&'static str, u64>>,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
    open_connections: AtomicI64,
    refused_connections: AtomicU64,
    detached_runs: AtomicU64,
    resumed_streams: AtomicU64,
    reattached_streams: AtomicU64,
}

/// Counts one open AG-UI stream for as long as it lives.
pub struct ActiveStream(Arc<Metrics>);

impl Drop for ActiveStream {
    fn drop(&mut self) {
        self.0.active_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    /// A client connection over `max_connections`, answered 503 and closed.
    pub fn count_refused_connection(&self) {
        self.refused_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// A run whose client went away went on, journaled, for a reconnect.
    pub fn count_detached(&self) {
        self.detached_runs.fetch_add(1, Ordering::Relaxed);
    }

    /// A client continued a journaled run (reconnect or connect).
    pub fn count_resumed(&self) {
        self.resumed_streams.fetch_add(1, Ordering::Relaxed);
    }

    /// A broken upstream stream was replaced by a resubscription.
    pub fn count_reattached(&self) {
        self.reattached_streams.fetch_add(1, Ordering::Relaxed);
    }

    /// `delta` is +1 when a connection opens, -1 when it closes.
    pub fn count_open_connection(&self, delta: i64) {
        self.open_connections.fetch_add(delta, Ordering::Relaxed);
    }

    pub fn stream_started(self: &Arc<Self>) -> ActiveStream {
        self.active_streams.fetch_add(1, Ordering::Relaxed);
        ActiveStream(self.clone())
    }

    pub fn active_streams(&self) -> i64 {
        self.active_streams.load(Ordering::Relaxed)
    }

    pub fn count_event(&self, event: &Event) {
        self.events[event.kind_index()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_error(&self, kind: &str) {
        if let Ok(mut errors) = self.errors.lock() {
            // Codes are a closed set of constants in practice; the bound
            // keeps an upstream inventing codes from growing the map.
            if errors.len() < 256 || errors.contains_key(kind) {
                *errors.entry(kind.to_owned()).or_default() += 1;
            }
        }
    }

    pub fn count_request(&self, route: &'static str) {
        if let Ok(mut requests) = self.requests.lock() {
            *requests.entry(route).or_default() += 1;
        }
    }

    pub fn observe_upstream_latency(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            if secs <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.latency_sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// `journal`: the embedded journal's runs and bytes, when it is on.
    /// The exposition text; `agents_up` is each agent's card state (from
    /// the background refresh: a scrape calls no upstream).
    pub fn render(&self, journal: Option<(usize, usize)>, agents_up: &[(&str, bool)]) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP agui_gateway_agent_up Whether the agent's card was fetched at the last try (1) or not (0)."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_agent_up gauge");
        for (agent, up) in agents_up {
            // Agent names are letters, digits, '.', '_' and '-': no escaping.
            let _ = writeln!(
                out,
                "agui_gateway_agent_up{{agent=\"{agent}\"}} {}",
                u8::from(*up)
            );
        }
        let _ = writeln!(
            out,
            "# HELP agui_gateway_active_streams AG-UI streams open now."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_active_streams gauge");
        let _ = writeln!(out, "agui_gateway_active_streams {}", self.active_streams());
        let _ = writeln!(
            out,
            "# HELP agui_gateway_open_connections Client connections open now."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_open_connections gauge");
        let _ = writeln!(
            out,
            "agui_gateway_open_connections {}",
            self.open_connections.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP agui_gateway_refused_connections_total Connections refused at max_connections."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_refused_connections_total counter");
        let _ = writeln!(
            out,
            "agui_gateway_refused_connections_total {}",
            self.refused_connections.load(Ordering::Relaxed)
        );
        let counters = [
            (
                "agui_gateway_detached_runs_total",
                "Runs that went on, journaled, after their client went away.",
                &self.detached_runs,
            ),
            (
                "agui_gateway_resumed_streams_total",
                "Streams that continued a journaled run (Last-Event-ID or connect).",
                &self.resumed_streams,
            ),
            (
                "agui_gateway_upstream_reattached_total",
                "Broken upstream streams replaced by a resubscription to the task.",
                &self.reattached_streams,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        if let Some((runs, bytes)) = journal {
            let gauges = [
                ("agui_gateway_journal_runs", "Runs the journal keeps.", runs),
                (
                    "agui_gateway_journal_bytes",
                    "Frame bytes the journal keeps.",
                    bytes,
                ),
            ];
            for (name, help, value) in gauges {
                let _ = writeln!(out, "# HELP {name} {help}");
                let _ = writeln!(out, "# TYPE {name} gauge");
                let _ = writeln!(out, "{name} {value}");
            }
        }
        let _ = writeln!(
            out,
            "# HELP agui_gateway_events_total AG-UI events sent, by type."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_events_total counter");
        for (kind, count) in Event::TYPE_NAMES.iter().zip(&self.events) {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                let _ = writeln!(out, "agui_gateway_events_total{{type=\"{kind}\"}} {count}");
            }
        }
        let _ = writeln!(
            out,
            "# HELP agui_gateway_errors_total Runs that ended in error, by code."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_errors_total counter");
        if let Ok(errors) = self.errors.lock() {
            for (kind, count) in errors.iter() {
                let kind = kind.replace(['"', '\\', '\n'], "_");
                let _ = writeln!(out, "agui_gateway_errors_total{{kind=\"{kind}\"}} {count}");
            }
        }
        let _ = writeln!(
            out,
            "# HELP agui_gateway_requests_total Requests, by route."
        );
        let _ = writeln!(out, "# TYPE agui_gateway_requests_total counter");
        if let Ok(requests) = self.requests.lock() {
            for (route, count) in requests.iter() {
                let _ = writeln!(
                    out,
                    "agui_gateway_requests_total{{route=\"{route}\"}} {count}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP agui_gateway_upstream_latency_seconds Time to the upstream's response headers."
        );
        let _ = writeln!(
            out,
            "# TYPE agui_gateway_upstream_latency_seconds histogram"
        );
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            let _ = writeln!(
                out,
                "agui_gateway_upstream_latency_seconds_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "agui_gateway_upstream_latency_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let sum = self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "agui_gateway_upstream_latency_seconds_sum {sum}");
        let _ = writeln!(out, "agui_gateway_upstream_latency_seconds_count {count}");
        out
    }
}
