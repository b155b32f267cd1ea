//! OpenTelemetry traces: a server span per request (the client's
//! `traceparent` its parent), a client span per call to an agent, whose
//! context goes upstream as `traceparent` and which lasts as long as the
//! call (its `CallSpan` is held by whoever reads the answer). Spans are exported over
//! OTLP/HTTP (JSON) when an endpoint is configured; without one the
//! gateway makes no span and changes no trace header: the client's
//! `traceparent` goes upstream where the forwarding policy forwards it. W3C trace
//! context only (`traceparent`, `tracestate`).
//!
//! Spans carry the method, the route, the status, the agent, the mode,
//! the event count and the `RUN_ERROR` code: never a header, a query or a
//! body.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::http::{HeaderMap, Method, StatusCode};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_http::{Bytes, HeaderExtractor, HeaderInjector, HttpClient, HttpError};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use url::Url;

/// The instrumentation scope and the default `service.name`.
const NAME: &str = "agui-gateway";

/// Set once spans are exported: without it a request has no trace at all
/// (no header read, no allocation); the client's trace headers go upstream
/// as the forwarding policy let them through.
static EXPORTING: AtomicBool = AtomicBool::new(false);

fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// The W3C trace-context headers: replaced, never passed on as the client
/// sent them, when the gateway adds its own span.
const TRACE_HEADERS: [&str; 2] = ["traceparent", "tracestate"];

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

/// Starts exporting to `endpoint` (an OTLP/HTTP collector: its base URL,
/// `/v1/traces` is added, or the full traces URL). Must run inside the
/// Tokio runtime: exports are sent from it.
pub fn init(endpoint: &Url) -> Result<SdkTracerProvider, TelemetryError> {
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    let mut url = endpoint.to_string();
    if !endpoint.path().ends_with("/v1/traces") {
        url = format!("{}/v1/traces", url.trim_end_matches('/'));
    }
    let client = OnRuntime {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            // Like every other call: the configured origin, never another.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?,
        runtime: tokio::runtime::Handle::current(),
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(url)
        .with_http_client(client)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(NAME);
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    global::set_tracer_provider(provider.clone());
    EXPORTING.store(true, Ordering::Relaxed);
    Ok(provider)
}

/// The batch processor exports from a thread of its own, which has no
/// Tokio reactor for reqwest: each export is sent on the runtime.
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(
        &self,
        request: axum::http::Request<Bytes>,
    ) -> Result<axum::http::Response<Bytes>, HttpError> {
        let client = self.client.clone();
        self.runtime
            .spawn(async move { client.send_bytes(request).await })
            .await
            .map_err(|err| Box::new(err) as HttpError)?
    }
}

/// One request's trace: its server span's context, the parent of the
/// client spans of the calls it makes (a cancel or a re-attach after the
/// request ended included).
#[derive(Debug)]
pub struct RequestTrace {
    cx: Context,
}

/// A call's client span, ended when dropped: whoever reads the call's
/// answer holds it until the answer is read (a stream: until it ends).
/// Empty when spans are not exported.
#[derive(Debug, Default)]
pub struct CallSpan(Option<Context>);

impl CallSpan {
    /// The call failed: the agent was unreachable, its answer broke off,
    /// or it reported an error (`why`: a short reason or an error code).
    pub fn fail(&self, why: &str) {
        if let Some(cx) = &self.0 {
            cx.span().set_status(Status::error(why.to_owned()));
        }
    }

    /// What the run used, as OpenTelemetry's GenAI conventions name it.
    pub fn usage(&self, input: u64, output: u64) {
        if let Some(cx) = &self.0 {
            let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            cx.span().set_attributes([
                KeyValue::new("gen_ai.usage.input_tokens", count(input)),
                KeyValue::new("gen_ai.usage.output_tokens", count(output)),
            ]);
        }
    }

    /// The agent answered `status` (a failure unless 2xx).
    pub fn answered(&self, status: StatusCode) {
        if let Some(cx) = &self.0 {
            let span = cx.span();
            span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status.as_u16()),
            ));
            if !status.is_success() {
                span.set_status(Status::error(format!("HTTP {}", status.as_u16())));
            }
        }
    }
}

impl Drop for CallSpan {
    fn drop(&mut self) {
        if let Some(cx) = self.0.take() {
            cx.span().end();
        }
    }
}

/// Shared by the access layer (which ends it) and the handlers (which
/// open client spans under it).
pub type SharedTrace = Arc<RequestTrace>;

/// The server span of a request, its parent read from the client's
/// `traceparent` (a malformed one starts a new trace); none when spans are
/// not exported.
pub fn start_request(headers: &HeaderMap, method: &Method, path: &str) -> Option<SharedTrace> {
    if !exporting() {
        return None;
    }
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    let route = route_of(path);
    let tracer = global::tracer(NAME);
    let span = tracer
        .span_builder(format!("{method} {route}"))
        .with_kind(SpanKind::Server)
        .with_attributes([
            KeyValue::new("http.request.method", method.to_string()),
            KeyValue::new("http.route", route),
            KeyValue::new("url.path", path.chars().take(200).collect::<String>()),
        ])
        .start_with_context(&tracer, &parent);
    Some(Arc::new(RequestTrace {
        cx: parent.with_span(span),
    }))
}

/// What the access layer knows when a request ends.
pub struct Outcome<'a> {
    pub status: StatusCode,
    pub agent: Option<&'a str>,
    pub mode: Option<&'a str>,
    pub events: u64,
    pub run_error: Option<&'a str>,
    pub end: &'a str,
}

impl RequestTrace {
    /// A client span for a call to `agent` (a trace exists only while
    /// spans are exported): its `traceparent` (the gateway's own header,
    /// like `Via`) replaces the client's in `headers`, which go upstream;
    /// the client's `tracestate` goes on only where the forwarding policy
    /// let it through (it is in `headers` then).
    pub fn call_upstream(&self, agent: &str, headers: &mut HeaderMap) -> CallSpan {
        let forwards_state = headers.contains_key("tracestate");
        for name in TRACE_HEADERS {
            headers.remove(name);
        }
        let tracer = global::tracer(NAME);
        let span = tracer
            .span_builder(format!("A2A {agent}"))
            .with_kind(SpanKind::Client)
            .with_attributes([KeyValue::new("agui.agent", agent.to_owned())])
            .start_with_context(&tracer, &self.cx);
        let cx = self.cx.with_span(span);
        TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
        if !forwards_state {
            headers.remove("tracestate");
        }
        CallSpan(Some(cx))
    }

    /// Ends the server span with what the request became.
    pub fn end(&self, outcome: &Outcome<'_>) {
        let failed = outcome.status.is_server_error() || outcome.run_error.is_some();
        let span = self.cx.span();
        let mut attributes = vec![
            KeyValue::new(
                "http.response.status_code",
                i64::from(outcome.status.as_u16()),
            ),
            KeyValue::new(
                "agui.events",
                i64::try_from(outcome.events).unwrap_or(i64::MAX),
            ),
            KeyValue::new("agui.end", outcome.end.to_owned()),
        ];
        if let Some(agent) = outcome.agent {
            attributes.push(KeyValue::new("agui.agent", agent.to_owned()));
        }
        if let Some(mode) = outcome.mode {
            attributes.push(KeyValue::new("agui.mode", mode.to_owned()));
        }
        if let Some(code) = outcome.run_error {
            attributes.push(KeyValue::new("agui.run_error", code.to_owned()));
        }
        span.set_attributes(attributes);
        if failed {
            span.set_status(Status::error(
                outcome
                    .run_error
                    .map_or_else(|| outcome.status.to_string(), str::to_owned),
            ));
        }
        span.end();
    }
}

/// A low-cardinality route for a path: agent names and the rest of a
/// proxied path are placeholders.
fn route_of(path: &str) -> String {
    let Some(below) = path.strip_prefix("/v1/agents/") else {
        return match path {
            "/agui" | "/agui/connect" | "/agui/stop" | "/healthz" | "/readyz" | "/metrics"
            | "/v1/agents" | "/inspect" => path.to_owned(),
            _ if path.starts_with("/inspect/") => "/inspect/*".to_owned(),
            _ => "/*".to_owned(),
        };
    };
    let rest = below.split_once('/').map_or("", |(_, rest)| rest);
    match rest {
        "" => "/v1/agents/{name}".to_owned(),
        "agui" | "agui/connect" | "agui/stop" => format!("/v1/agents/{{name}}/{rest}"),
        _ => "/v1/agents/{name}/*".to_owned(),
    }
}
