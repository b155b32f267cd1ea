//! The HTTP service: routes, transparent proxying and AG-UI negotiation.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use a2a_agui::{Dialect, Options};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use url::Url;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::relay::{self, Run, Shutdown, random_u64};
use crate::upstream::{Agent, OutgoingMessage, base_url, streaming_request};
use crate::{agui, card};

/// A task left waiting for input, by AG-UI thread: the fallback for
/// clients that do not send message metadata back (before 1.0).
#[derive(Default)]
pub struct WaitingTasks {
    tasks: Mutex<(HashMap<String, String>, VecDeque<String>)>,
}

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

pub struct AppState {
    /// One permit per open converted stream, held by the stream's body.
    pub streams: Arc<tokio::sync::Semaphore>,
    pub config: Config,
    pub agents: BTreeMap<String, Arc<Agent>>,
    pub metrics: Arc<Metrics>,
    pub shutdown: Shutdown,
    pub waiting: WaitingTasks,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    pub fn new(config: Config, shutdown: Shutdown) -> Result<AppState, reqwest::Error> {
        let mut agents = BTreeMap::new();
        for agent in &config.agents {
            agents.insert(agent.name.clone(), Arc::new(Agent::new(agent.clone())?));
        }
        Ok(AppState {
            streams: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
            config,
            agents,
            metrics: Arc::new(Metrics::default()),
            shutdown,
            waiting: WaitingTasks::default(),
        })
    }

    fn default_agent(&self) -> Option<&Arc<Agent>> {
        self.config
            .default_agent
            .as_ref()
            .and_then(|name| self.agents.get(name))
    }
}

pub fn router(state: SharedState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/v1/agents", get(list_agents))
        .route("/agui", post(agui_default))
        .route("/v1/agents/{name}/agui", post(agui_named))
        .route("/v1/agents/{name}", any(proxy_named_root))
        .route("/v1/agents/{name}/", any(proxy_named_root))
        .route("/v1/agents/{name}/{*rest}", any(proxy_named))
        .fallback(proxy_default)
        // The gateway enforces `max_request_bytes` itself, with a JSON error.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(state.clone(), gate))
        .with_state(state)
}

/// A permit for one more converted stream, or the 503 to send instead.
pub fn stream_permit(state: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, Box<Response>> {
    state.streams.clone().try_acquire_owned().map_err(|_| {
        state.metrics.count_error("GATEWAY_BUSY");
        Box::new(error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "gateway",
            "GATEWAY_BUSY",
            format!(
                "{} streams are open, the configured maximum",
                state.config.max_streams
            ),
        ))
    })
}

/// JSON error before any stream starts; `side` says who failed.
pub fn error_response(
    status: StatusCode,
    side: &str,
    code: &str,
    message: impl Into<String>,
) -> Response {
    let body = json!({ "error": { "code": code, "message": message.into(), "side": side } });
    (status, axum::Json(body)).into_response()
}

/// CORS and draining, in front of every route.
async fn gate(
    State(state): State<SharedState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let origin = request.headers().get(header::ORIGIN).cloned();
    let allowed = origin.as_ref().and_then(|origin| {
        let origins = &state.config.cors_origins;
        let text = origin.to_str().ok()?;
        if origins.iter().any(|o| o == "*") {
            Some(HeaderValue::from_static("*"))
        } else {
            origins.iter().any(|o| o == text).then(|| origin.clone())
        }
    });
    if request.method() == Method::OPTIONS
        && let Some(allowed) = &allowed
    {
        let mut response = StatusCode::NO_CONTENT.into_response();
        add_cors(response.headers_mut(), allowed);
        return response;
    }
    let exempt = matches!(request.uri().path(), "/healthz" | "/readyz" | "/metrics");
    let mut response = if state.shutdown.draining.is_cancelled() && !exempt {
        error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "gateway",
            "GATEWAY_DRAINING",
            "the gateway is shutting down",
        )
    } else {
        next.run(request).await
    };
    if let Some(allowed) = &allowed {
        add_cors(response.headers_mut(), allowed);
    }
    response
}

fn add_cors(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("*"),
    );
}

async fn healthz() -> impl IntoResponse {
    axum::Json(json!({ "status": "ok" }))
}

/// Ready when not draining and every upstream serves its card.
async fn readyz(State(state): State<SharedState>) -> Response {
    if state.shutdown.draining.is_cancelled() {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "gateway",
            "GATEWAY_DRAINING",
            "draining",
        );
    }
    let mut agents = serde_json::Map::new();
    let mut ready = true;
    for (name, agent) in &state.agents {
        let status = match agent.refresh_card().await {
            Ok(_) => json!({ "ready": true }),
            Err(err) => {
                ready = false;
                json!({ "ready": false, "error": err.to_string() })
            }
        };
        agents.insert(name.clone(), status);
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        axum::Json(json!({ "ready": ready, "agents": agents })),
    )
        .into_response()
}

async fn metrics(State(state): State<SharedState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

async fn list_agents(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    state.metrics.count_request("agents");
    let public = card::public_base(&state.config, &headers);
    let mut agents = Vec::new();
    for (name, agent) in &state.agents {
        let card = agent.current_card().await;
        let field = |key: &str| {
            card.as_ref()
                .and_then(|c| c.card[key].as_str().map(str::to_owned))
        };
        agents.push(json!({
            "name": name,
            "cardName": field("name"),
            "description": field("description"),
            "url": format!("{}/v1/agents/{name}/", public.trim_end_matches('/')),
            "default": state.config.default_agent.as_deref() == Some(name.as_str()),
        }));
    }
    axum::Json(json!({ "agents": agents })).into_response()
}

fn named(state: &AppState, name: &str) -> Result<Arc<Agent>, Box<Response>> {
    state.agents.get(name).cloned().ok_or_else(|| {
        Box::new(error_response(
            StatusCode::NOT_FOUND,
            "client",
            "UNKNOWN_AGENT",
            format!("no agent named {name:?}"),
        ))
    })
}

/// The default agent, or a 404 saying which named route to use instead.
fn default_agent(state: &AppState, instead: &str) -> Result<Arc<Agent>, Box<Response>> {
    state.default_agent().cloned().ok_or_else(|| {
        Box::new(error_response(
            StatusCode::NOT_FOUND,
            "client",
            "NO_DEFAULT_AGENT",
            format!("no default agent: use /v1/agents/{{name}}/{instead}"),
        ))
    })
}

async fn agui_default(State(state): State<SharedState>, request: Request) -> Response {
    match default_agent(&state, "agui") {
        Ok(agent) => agui_run(state, agent, request).await,
        Err(response) => *response,
    }
}

async fn agui_named(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    match named(&state, &name) {
        Ok(agent) => agui_run(state, agent, request).await,
        Err(response) => *response,
    }
}

async fn agui_run(state: SharedState, agent: Arc<Agent>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    match read_body(&state, body).await {
        Ok(body) => agui::run(state, agent, parts.headers, body).await,
        Err(response) => *response,
    }
}

/// The request body, up to `max_request_bytes`; past it, a 413 JSON error.
async fn read_body(state: &AppState, body: Body) -> Result<Bytes, Box<Response>> {
    axum::body::to_bytes(body, state.config.max_request_bytes)
        .await
        .map_err(|_| {
            Box::new(error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                "client",
                "REQUEST_TOO_LARGE",
                format!(
                    "the request body exceeds {} bytes",
                    state.config.max_request_bytes
                ),
            ))
        })
}

async fn proxy_default(State(state): State<SharedState>, request: Request) -> Response {
    let agent = match default_agent(&state, "") {
        Ok(agent) => agent,
        Err(response) => return *response,
    };
    let path = request.uri().path().to_owned();
    proxy(state, agent, path, String::new(), request).await
}

async fn proxy_named_root(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    proxy_named_path(state, &name, "/".to_owned(), request).await
}

async fn proxy_named(
    State(state): State<SharedState>,
    Path((name, rest)): Path<(String, String)>,
    request: Request,
) -> Response {
    proxy_named_path(state, &name, format!("/{rest}"), request).await
}

/// A named agent's route: `path` goes to its upstream, and its card is
/// mounted under `/v1/agents/{name}`.
async fn proxy_named_path(
    state: SharedState,
    name: &str,
    path: String,
    request: Request,
) -> Response {
    match named(&state, name) {
        Ok(agent) => proxy(state, agent, path, format!("/v1/agents/{name}"), request).await,
        Err(response) => *response,
    }
}

/// Hop-by-hop headers, which belong to one connection and are not forwarded.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

fn forwardable(name: &HeaderName) -> bool {
    !HOP_BY_HOP.contains(&name.as_str()) && name != header::CONTENT_LENGTH
}

/// The upstream URL for a gateway path: the same path under the upstream.
fn upstream_url(agent: &Agent, path: &str, query: Option<&str>) -> Result<Url, Box<Response>> {
    let url = if path == "/" || path.is_empty() {
        Some(agent.config.upstream.clone())
    } else {
        base_url(&agent.config.upstream)
            .join(path.trim_start_matches('/'))
            .ok()
    };
    let Some(mut url) = url else {
        return Err(Box::new(error_response(
            StatusCode::BAD_REQUEST,
            "client",
            "INVALID_PATH",
            "the path cannot be forwarded",
        )));
    };
    url.set_query(query);
    Ok(url)
}

/// What a request asks of the gateway once AG-UI output was negotiated.
enum Negotiated {
    /// An A2A call the upstream answers as a stream or a result: forward
    /// it as it is and convert the answer.
    Forward,
    /// The seed's `{"request": …}` / `{"message": …}` body: the gateway
    /// builds the upstream's own streaming call.
    Build(Box<OutgoingMessage>),
    /// An A2A call with no AG-UI form (`tasks/get`, push configs, …).
    NotConvertible,
    /// A `RunAgentInput` (what `@ag-ui/client`'s HttpAgent always posts):
    /// served like the AG-UI endpoint.
    RunAgentInput,
}

const STREAMING_METHODS: [&str; 5] = [
    "message/stream",
    "SendStreamingMessage",
    "tasks/resubscribe",
    "SubscribeToTask",
    "tasks/subscribe",
];
const SEND_METHODS: [&str; 2] = ["message/send", "SendMessage"];

fn negotiate(method: &Method, path: &str, body: &[u8]) -> Result<Negotiated, Box<Response>> {
    let bad = |message: String| {
        Box::new(error_response(
            StatusCode::BAD_REQUEST,
            "client",
            "INVALID_REQUEST",
            message,
        ))
    };
    if path.ends_with("message:stream")
        || path.ends_with("message:send")
        || path.ends_with(":subscribe")
    {
        return Ok(Negotiated::Forward);
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return if method == Method::GET {
            Ok(Negotiated::NotConvertible)
        } else {
            Err(bad(
                "an AG-UI stream was asked for but the request has no body".to_owned(),
            ))
        };
    }
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not JSON: {e}")))?;
    if let Some(rpc_method) = json.get("method").and_then(Value::as_str) {
        return Ok(
            if STREAMING_METHODS.contains(&rpc_method) || SEND_METHODS.contains(&rpc_method) {
                Negotiated::Forward
            } else {
                Negotiated::NotConvertible
            },
        );
    }
    if json.get("threadId").is_some()
        && json.get("runId").is_some()
        && json.get("messages").is_some()
    {
        return Ok(Negotiated::RunAgentInput);
    }
    let message = json
        .get("request")
        .or_else(|| json.get("message"))
        .or_else(|| json.pointer("/params/message"));
    match message {
        Some(message) => agui::message_from_a2a(message).map(|m| Negotiated::Build(Box::new(m))).map_err(bad),
        None => Err(bad(
            "cannot tell which A2A call this is: expected a JSON-RPC request or {\"request\": message}".to_owned(),
        )),
    }
}

fn wants_agui(headers: &HeaderMap, query: Option<&str>) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/x-agui-events") || v.contains("application/agui+json"));
    accept || query_param(query, "format").as_deref() == Some("agui")
}

pub fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The output dialect: `?dialect=` wins over the agent's configuration.
pub fn output_dialect(agent: &Agent, query: Option<&str>) -> Dialect {
    query_param(query, "dialect")
        .and_then(|d| Dialect::parse(&d))
        .unwrap_or(agent.config.output)
}

async fn proxy(
    state: SharedState,
    agent: Arc<Agent>,
    path: String,
    mount: String,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let query = parts.uri.query().map(str::to_owned);
    let body = match read_body(&state, body).await {
        Ok(body) => body,
        Err(response) => return *response,
    };
    if parts.method == Method::GET && card::is_card_path(&path) {
        state.metrics.count_request("card");
        return card::serve(&state, &agent, &path, &mount, &parts.headers).await;
    }
    if !wants_agui(&parts.headers, query.as_deref()) {
        state.metrics.count_request("passthrough");
        return passthrough(&state, &agent, &parts, &path, query.as_deref(), body).await;
    }
    let negotiated = match negotiate(&parts.method, &path, &body) {
        Ok(negotiated) => negotiated,
        Err(response) => return *response,
    };
    let dialect = output_dialect(&agent, query.as_deref());
    let make_run = |permit| Run {
        agent: agent.clone(),
        options: Options {
            interrupts: agent.config.interrupts,
            ..Options::default()
        },
        dialect,
        keepalive: state.config.keepalive,
        max_event_bytes: state.config.max_event_bytes,
        shutdown: state.shutdown.clone(),
        metrics: state.metrics.clone(),
        on_end: None,
        permit,
    };
    let started = Instant::now();
    match negotiated {
        Negotiated::RunAgentInput => agui::run(state, agent, parts.headers, body).await,
        Negotiated::NotConvertible => {
            state.metrics.count_request("passthrough");
            passthrough(&state, &agent, &parts, &path, query.as_deref(), body).await
        }
        Negotiated::Forward => {
            state.metrics.count_request("negotiated");
            let run = match stream_permit(&state) {
                Ok(permit) => make_run(permit),
                Err(response) => return *response,
            };
            let url = match upstream_url(&agent, &path, query.as_deref()) {
                Ok(url) => url,
                Err(response) => return *response,
            };
            let mut request = agent.stream_client.request(parts.method.clone(), url);
            request = forward_headers(request, &parts.headers, &agent, Accept::Replace);
            request = request.header(header::ACCEPT, "text/event-stream, application/json");
            if needs_version_header(&body) && !parts.headers.contains_key("a2a-version") {
                request = request.header("A2A-Version", "1.0");
            }
            let response = agent.send_stream(request.body(body)).await;
            relay::relay(run, response, started).await
        }
        Negotiated::Build(message) => {
            state.metrics.count_request("negotiated");
            let run = match stream_permit(&state) {
                Ok(permit) => make_run(permit),
                Err(response) => return *response,
            };
            let (url, version) = agent.endpoint().await;
            let rpc_id = format!("agui-gateway-{:x}", random_u64());
            let (body, needs_version) = streaming_request(version, &message, &rpc_id);
            let mut request = agent.stream_client.post(url).json(&body);
            request = forward_headers(request, &parts.headers, &agent, Accept::Replace);
            request = request.header(header::ACCEPT, "text/event-stream, application/json");
            if needs_version {
                request = request.header("A2A-Version", "1.0");
            }
            relay::relay(run, agent.send_stream(request).await, started).await
        }
    }
}

/// A JSON-RPC 1.0 method name (PascalCase) needs `A2A-Version: 1.0`.
fn needs_version_header(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("method")
                .and_then(Value::as_str)
                .map(|m| m.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .unwrap_or(false)
}

/// Whether the client's `Accept` and `Accept-Encoding` go upstream: not
/// when it negotiated AG-UI, since the gateway then reads the answer itself
/// (as A2A, uncompressed: the converter needs plain bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    Keep,
    Replace,
}

/// The client's headers minus hop-by-hop ones, plus the agent's
/// configured headers.
pub fn forward_headers(
    mut request: reqwest::RequestBuilder,
    headers: &HeaderMap,
    agent: &Agent,
    accept: Accept,
) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        let negotiation = name == header::ACCEPT || name == header::ACCEPT_ENCODING;
        if forwardable(name) && (accept == Accept::Keep || !negotiation) {
            request = request.header(name, value);
        }
    }
    if accept == Accept::Replace {
        request = request.header(header::ACCEPT_ENCODING, "identity");
    }
    for (name, value) in &agent.config.headers {
        request = request.header(name, value);
    }
    request
}

/// Transparent mode: the request as it came, the response as it comes
/// back, byte for byte; only hop-by-hop headers change.
async fn passthrough(
    state: &AppState,
    agent: &Agent,
    parts: &axum::http::request::Parts,
    path: &str,
    query: Option<&str>,
    body: Bytes,
) -> Response {
    let url = match upstream_url(agent, path, query) {
        Ok(url) => url,
        Err(response) => return *response,
    };
    let request = forward_headers(
        agent.client.request(parts.method.clone(), url),
        &parts.headers,
        agent,
        Accept::Keep,
    );
    let started = Instant::now();
    let upstream = match request.body(body).send().await {
        Ok(upstream) => upstream,
        Err(err) => {
            state.metrics.count_error(relay::codes::CONNECT);
            let status = if err.is_timeout() {
                StatusCode::GATEWAY_TIMEOUT
            } else {
                StatusCode::BAD_GATEWAY
            };
            return error_response(
                status,
                "upstream",
                relay::codes::CONNECT,
                format!("the upstream agent could not be reached: {err}"),
            );
        }
    };
    state.metrics.observe_upstream_latency(started.elapsed());
    let status = upstream.status();
    let mut headers = HeaderMap::new();
    for (name, value) in upstream.headers() {
        if forwardable(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    let stop = state.shutdown.stop.clone();
    let body =
        head_first(upstream.bytes_stream()).take_until(async move { stop.cancelled().await });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Holds back an error on the body's very first poll for one `Pending`.
/// hyper returns a body error before flushing the response head, so an
/// upstream whose body fails at once (a2a-sdk 0.3's REST subscribe to a
/// finished task does) would otherwise reach the client as no response at
/// all instead of the status and headers the upstream sent.
fn head_first<S, E>(body: S) -> impl futures::Stream<Item = Result<Bytes, E>> + Send
where
    S: futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Send + 'static,
{
    let mut body = Box::pin(body);
    let mut first = true;
    let mut held: Option<E> = None;
    futures::stream::poll_fn(move |cx| {
        if let Some(err) = held.take() {
            return std::task::Poll::Ready(Some(Err(err)));
        }
        let polled = body.as_mut().poll_next(cx);
        if std::mem::take(&mut first)
            && let std::task::Poll::Ready(Some(Err(err))) = polled
        {
            held = Some(err);
            cx.waker().wake_by_ref();
            return std::task::Poll::Pending;
        }
        polled
    })
}
