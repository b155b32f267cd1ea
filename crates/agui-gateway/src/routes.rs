//! The HTTP surface: the router, thin handlers, and the CORS and draining
//! gate in front of them. Deciding what a request wants is `negotiate`'s
//! job, building the upstream call `outbound`'s, streaming the answer
//! `relay`'s.

use std::sync::Arc;
use std::time::Instant;

use a2a_agui::{ErrorCode, Options};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures::StreamExt;
use serde_json::json;

use crate::error::ApiError;
use crate::negotiate::{Negotiated, negotiate, output_format, wants_agui};
use crate::relay::{self, Conversion};
use crate::state::{AppState, SharedState};
use crate::upstream::{Agent, random_u64};
use crate::{agui, card, outbound};

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

fn draining() -> ApiError {
    ApiError::unavailable(ErrorCode::GatewayDraining, "the gateway is shutting down")
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
    // Probes and metrics keep answering: orchestrators watch a drain.
    let exempt = matches!(request.uri().path(), "/healthz" | "/readyz" | "/metrics");
    let mut response = if state.shutdown.draining.is_cancelled() && !exempt {
        draining().into_response()
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
async fn readyz(State(state): State<SharedState>) -> Result<Response, ApiError> {
    if state.shutdown.draining.is_cancelled() {
        return Err(ApiError::unavailable(
            ErrorCode::GatewayDraining,
            "draining",
        ));
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
    let body = axum::Json(json!({ "ready": ready, "agents": agents }));
    Ok((status, body).into_response())
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

async fn agui_default(
    State(state): State<SharedState>,
    request: Request,
) -> Result<Response, ApiError> {
    let agent = state.default_agent("agui")?;
    agui_run(state, agent, request).await
}

async fn agui_named(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    let agent = state.named(&name)?;
    agui_run(state, agent, request).await
}

async fn agui_run(
    state: SharedState,
    agent: Arc<Agent>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let body = read_body(&state, body).await?;
    agui::run(state, agent, parts.headers, body).await
}

/// The request body, up to `max_request_bytes`; past it, a 413 JSON error.
async fn read_body(state: &AppState, body: Body) -> Result<Bytes, ApiError> {
    let limit = state.config.max_request_bytes;
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::RequestTooLarge,
            format!("the request body exceeds {limit} bytes"),
        )
    })
}

async fn proxy_default(
    State(state): State<SharedState>,
    request: Request,
) -> Result<Response, ApiError> {
    let agent = state.default_agent("")?;
    let path = request.uri().path().to_owned();
    proxy(state, agent, path, String::new(), request).await
}

async fn proxy_named_root(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    proxy_named_path(state, &name, "/".to_owned(), request).await
}

async fn proxy_named(
    State(state): State<SharedState>,
    Path((name, rest)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    proxy_named_path(state, &name, format!("/{rest}"), request).await
}

/// A named agent's route: `path` goes to its upstream, and its card is
/// mounted under `/v1/agents/{name}`.
async fn proxy_named_path(
    state: SharedState,
    name: &str,
    path: String,
    request: Request,
) -> Result<Response, ApiError> {
    let agent = state.named(name)?;
    proxy(state, agent, path, format!("/v1/agents/{name}"), request).await
}

/// An agent's A2A routes: its card, passthrough, or a converted stream.
async fn proxy(
    state: SharedState,
    agent: Arc<Agent>,
    path: String,
    mount: String,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let query = parts.uri.query();
    let body = read_body(&state, body).await?;
    if parts.method == Method::GET && card::is_card_path(&path) {
        state.metrics.count_request("card");
        return card::serve(&state.config, &agent, &path, &mount, &parts.headers).await;
    }
    if !wants_agui(&parts.headers, query) {
        state.metrics.count_request("passthrough");
        return passthrough(&state, &agent, &parts, &path, body).await;
    }
    let seed = match negotiate(&parts.method, &path, &body)? {
        Negotiated::RunAgentInput => return agui::run(state, agent, parts.headers, body).await,
        Negotiated::NotConvertible => {
            state.metrics.count_request("passthrough");
            return passthrough(&state, &agent, &parts, &path, body).await;
        }
        Negotiated::Forward => None,
        Negotiated::Build(message) => Some(message),
    };
    state.metrics.count_request("negotiated");
    let conversion = Conversion {
        options: Options {
            interrupts: agent.config.interrupts,
            ..Options::default()
        },
        format: output_format(query, agent.config.format),
        on_end: None,
    };
    let request = async {
        match seed {
            None => outbound::forward(
                &agent,
                parts.method.clone(),
                &path,
                query,
                &parts.headers,
                body,
            ),
            Some(message) => {
                let rpc_id = format!("agui-gateway-{:x}", random_u64());
                // Extensions in the seed's message are not activated: a
                // client wanting that sends the header itself.
                Ok(outbound::build(&agent, &parts.headers, &message, &rpc_id, &[]).await)
            }
        }
    };
    relay::open(&state, agent.clone(), request, conversion).await
}

/// Transparent mode: the request as it came, the response as it comes
/// back, byte for byte; only hop-by-hop headers change.
async fn passthrough(
    state: &AppState,
    agent: &Agent,
    parts: &axum::http::request::Parts,
    path: &str,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request = outbound::passthrough(
        agent,
        parts.method.clone(),
        path,
        parts.uri.query(),
        &parts.headers,
        body,
    )?;
    let started = Instant::now();
    let upstream = request.send().await.map_err(|err| {
        let (status, code) = if err.is_timeout() {
            (StatusCode::GATEWAY_TIMEOUT, ErrorCode::UpstreamTimeout)
        } else {
            (StatusCode::BAD_GATEWAY, ErrorCode::UpstreamUnreachable)
        };
        state.metrics.count_error(code.as_str());
        ApiError::new(
            status,
            code,
            format!("the upstream agent could not be reached: {err}"),
        )
    })?;
    state.metrics.observe_upstream_latency(started.elapsed());
    let status = upstream.status();
    let headers = outbound::returned_headers(upstream.headers());
    let stop = state.shutdown.stop.clone();
    let body =
        head_first(upstream.bytes_stream()).take_until(async move { stop.cancelled().await });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
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
