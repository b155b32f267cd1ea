//! The HTTP surface: the router, thin handlers, and the CORS and draining
//! gate in front of them. Deciding what a request wants is `negotiate`'s
//! job, building the upstream call `outbound`'s, streaming the answer
//! `relay`'s.

use std::sync::Arc;
use std::time::Instant;

use a2a_agui::{ErrorCode, Options};
use agui_edge::cors;
use agui_journal::{CallerDigest, RunIdentity};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures::StreamExt;
use serde_json::{Value, json};

use super::agui_routes::{agui_input, read_body, run_by};
use super::error::ApiError;
use super::paths::{CardCall, card_call};
pub use super::probes::admin_router;
use super::probes::{agent_health, healthz, metrics, readyz};
use super::{card, copilotkit, gate, grpc_passthrough, inspect, paths};
use crate::http::negotiate::{Negotiated, negotiate, output_format, wants_agui};
use crate::obs::access;
use crate::obs::access::{AccessNote, Mode};
use crate::relay::{self, Conversion};
use crate::resume;
use crate::resume::WhenEmpty;
use crate::signing::{Policy, Verdict};
use crate::state::{AppHandle, AppState};
use crate::upstream::Agent;
use crate::upstream::call::Called;
use crate::upstream::headers::{ReturnPolicy, returned_headers};
use crate::upstream::outbound::{self, Forwarded};
use crate::upstream::run::RunCalled;

pub fn router(state: AppHandle) -> Router {
    let mut router = Router::new().route("/healthz", get(healthz));
    if state.config.admin_listen.is_none() {
        router = router
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics));
    }
    let router = router
        .route("/v1/agents", get(list_agents))
        .route(card::CARD_KEYS_PATH, get(card_keys))
        .route("/agui", post(agui_run))
        .route("/v1/agents/{name}/agui", post(agui_run))
        .route("/agui/connect", post(connect))
        .route("/v1/agents/{name}/agui/connect", post(connect))
        .route("/agui/stop", post(stop))
        .route("/v1/agents/{name}/agui/stop", post(stop))
        .route("/v1/agents/{name}", any(proxy_named))
        .route("/v1/agents/{name}/", any(proxy_named))
        .route("/v1/agents/{name}/{*rest}", any(proxy_named))
        .fallback(proxy_default);
    let router = if state.config.inspector {
        router.route("/inspect/agents/{name}/run", post(inspect_run))
    } else {
        router
    };
    let router = match state.config.copilotkit_path.clone() {
        Some(base) => router
            .route(&base, any(copilotkit::handle))
            .route(&format!("{base}/"), any(copilotkit::handle))
            .route(&format!("{base}/{{*rest}}"), any(copilotkit::handle)),
        None => router,
    };
    let router = router
        // The gateway enforces `max_request_bytes` itself, with a JSON error.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            gate::gate,
        ))
        .layer(axum::middleware::from_fn(grpc_passthrough::answers));
    // The inspector's page and scripts hold nothing secret: a browser
    // loads them without credentials, then calls the API with its own.
    let router = if state.config.inspector {
        inspect::page_routes(router)
    } else {
        router
    };
    // Outermost: a preflight is answered before draining, credentials and
    // rates are looked at.
    let router = match cors::layer(&state.config.cors) {
        Some(cors) => router
            .layer(cors)
            .layer(axum::middleware::map_response(cors::tidy)),
        None => router,
    };
    // Outside everything: preflights, refusals and errors get their line.
    let app = router
        .layer(axum::middleware::from_fn(access::layer))
        .with_state(state);
    // Before any route is chosen: one canonical path, what every route
    // (and the agent, which decodes the same) reads.
    Router::new().fallback_service(tower::ServiceExt::map_request(
        app,
        paths::canonical_request,
    ))
}

/// The gateway's card-signing key (`[card_signing] signing_key`), as the
/// `jku` of the cards it signs names it.
async fn card_keys(State(state): State<AppHandle>) -> Result<Response, ApiError> {
    match &state.card_signer {
        Some(signer) => Ok(axum::Json(signer.jwks()).into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::NoCardKeys,
            "this gateway signs no cards ([card_signing] signing_key)",
        )),
    }
}

async fn list_agents(State(state): State<AppHandle>, request: Request) -> Response {
    state
        .metrics
        .count_request(crate::obs::metrics::NO_AGENT, Mode::Agents);
    let public = card::public_base(&state.config, request.uri(), request.headers());
    let mut agents = Vec::new();
    for (name, agent) in &state.agents {
        if gate::allowed(&state, request.extensions(), agent).is_err() {
            continue;
        }
        let card = agent.current_card().await;
        let health = agent_health(agent).await;
        let field = |key: &str| {
            card.as_ref()
                .and_then(|c| c.card[key].as_str().map(str::to_owned))
        };
        let mut entry = json!({
            "name": name,
            "cardName": field("name"),
            "description": field("description"),
            "url": format!("{}/v1/agents/{name}/", public.trim_end_matches('/')),
            "default": state.config.default_agent.as_deref() == Some(name.as_str()),
        });
        if let (Value::Object(entry), Value::Object(health)) = (&mut entry, health) {
            entry.extend(health);
        }
        if let Some(capabilities) = state.capabilities(agent, card.as_deref()) {
            entry["capabilities"] = capabilities;
        }
        if agent.config.card_signatures != Policy::Off {
            let verdict = card.as_ref().and_then(|c| c.signature.as_ref());
            entry["cardSignature"] = json!(verdict.map_or("unknown", Verdict::as_str));
        }
        agents.push(entry);
    }
    let mut response = axum::Json(json!({ "agents": agents })).into_response();
    if card::varies_by_request(&state.config) {
        // Its URLs come from the request's host, as a card's do.
        card::vary_by_host(response.headers_mut());
    }
    response
}

/// The agent of an AG-UI route: named in `/v1/agents/{name}/…`, else the
/// default one (`instead` names the route to use when there is none).
fn agui_agent(state: &AppState, request: &Request, instead: &str) -> Result<Arc<Agent>, ApiError> {
    if request.uri().path().starts_with("/v1/agents/") {
        let (name, _) = split_agent_path(request.uri().path());
        Ok(state.named(&name)?)
    } else {
        Ok(state.default_agent(instead)?)
    }
}

async fn agui_run(State(state): State<AppHandle>, request: Request) -> Result<Response, ApiError> {
    let agent = agui_agent(&state, &request, "agui")?;
    run_agui(state, agent, request, Mode::Agui).await
}

/// The inspector's run: an AG-UI run of the named agent whose stream
/// carries the upstream events too.
async fn inspect_run(
    State(state): State<AppHandle>,
    request: Request,
) -> Result<Response, ApiError> {
    let below = request.uri().path().strip_prefix("/inspect/agents/");
    let name = below
        .and_then(|rest| rest.strip_suffix("/run"))
        .unwrap_or_default();
    let (name, _) = split_agent_path(&format!("/v1/agents/{name}"));
    let agent = state.named(&name)?;
    run_agui(state, agent, request, Mode::Inspect).await
}

/// An AG-UI run of `agent` (the inspector's too: `Mode::Inspect` taps the
/// upstream events into the stream).
async fn run_agui(
    state: AppHandle,
    agent: Arc<Agent>,
    request: Request,
    mode: Mode,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    gate::allowed(&state, &parts.extensions, &agent)?;
    let forwarded = Forwarded::new(&agent, &parts.headers, parts.extensions.get())
        .traced(parts.extensions.get())
        .authorized(&agent, parts.extensions.get())
        .await;
    let body = read_body(&state, body).await?;
    // Boxed: see `agui::run`.
    Box::pin(agui_input(state, agent, &parts, forwarded, body, mode)).await
}

async fn connect(State(state): State<AppHandle>, request: Request) -> Result<Response, ApiError> {
    let (agent, parts, caller, body) = run_request(&state, request, "agui/connect").await?;
    AccessNote::noted(&parts.extensions, agent.name(), Mode::Connect);
    state.metrics.count_request(agent.name(), Mode::Connect);
    let forwarded = Forwarded::new(&agent, &parts.headers, parts.extensions.get())
        .traced(parts.extensions.get())
        .authorized(&agent, parts.extensions.get())
        .await
        .usable()?;
    let request = (&parts.headers, &forwarded);
    let reader = gate::reader(&caller, &parts.extensions);
    let connected = resume::connect(
        &state,
        &agent,
        (&caller, reader),
        request,
        &body,
        WhenEmpty::NoContent,
    );
    Ok(connected.await?)
}

async fn stop(State(state): State<AppHandle>, request: Request) -> Result<Response, ApiError> {
    let (agent, parts, caller, body) = run_request(&state, request, "agui/stop").await?;
    AccessNote::noted(&parts.extensions, agent.name(), Mode::Stop);
    let forwarded = Forwarded::new(&agent, &parts.headers, parts.extensions.get())
        .traced(parts.extensions.get())
        .authorized(&agent, parts.extensions.get())
        .await
        .usable()?;
    Ok(resume::stop(&state, &agent, &caller, &forwarded, &body).await?)
}

/// What `connect` and `stop` both start from: the agent (checked against
/// the caller's allow list), the request's head, its caller and its body.
async fn run_request(
    state: &AppHandle,
    request: Request,
    route: &'static str,
) -> Result<(Arc<Agent>, axum::http::request::Parts, CallerDigest, Bytes), ApiError> {
    let agent = agui_agent(state, &request, route)?;
    let (parts, body) = request.into_parts();
    gate::allowed(state, &parts.extensions, &agent)?;
    let body = read_body(state, body).await?;
    let caller = gate::caller_digest(&gate::scope(&parts.extensions), &parts.headers);
    Ok((agent, parts, caller, body))
}

async fn proxy_default(
    State(state): State<AppHandle>,
    request: Request,
) -> Result<Response, ApiError> {
    let agent = state.default_agent("")?;
    let path = request.uri().path().to_owned();
    proxy(state, agent, path, String::new(), request).await
}

/// A named agent's route: the rest of the path goes to its upstream, and
/// its card is mounted under `/v1/agents/{name}`. The rest is taken from
/// the raw URI, still percent-encoded: the router's decoded copy would
/// turn `%2e%2e` into `..` and `%2F` into `/` before `target` could judge.
async fn proxy_named(
    State(state): State<AppHandle>,
    request: Request,
) -> Result<Response, ApiError> {
    let (name, path) = split_agent_path(request.uri().path());
    let agent = state.named(&name)?;
    proxy(state, agent, path, format!("/v1/agents/{name}"), request).await
}

/// `/v1/agents/{name}/{rest}` split by hand (the router only chose the
/// handler): the name percent-decoded (agent names are plain tokens, so
/// a name that does not decode names no agent), the rest still encoded.
fn split_agent_path(raw: &str) -> (String, String) {
    let below = raw.strip_prefix("/v1/agents/").unwrap_or_default();
    let (name, rest) = below.find('/').map_or((below, "/"), |i| below.split_at(i));
    let name = url::form_urlencoded::parse(format!("n={}", name.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default();
    (name, rest.to_owned())
}

/// An agent's A2A routes, phase by phase (ARCHITECTURE.md, "A request's
/// life"): `route` (the caller may use the agent; the target below its
/// base), the body, then the card, a passthrough, an AG-UI run, or
/// `negotiated` and `convert` (reconnect, call, relay; the relay observes).
async fn proxy(
    state: AppHandle,
    agent: Arc<Agent>,
    path: String,
    mount: String,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let routed = route(&state, &agent, &path, &parts).await?;
    let body = read_body(&state, body).await?;
    if grpc_passthrough::is_grpc(&parts.headers) {
        let at = (&parts, path.as_str(), mount.as_str());
        return grpc_passthrough::call(&state, &agent, at, routed.forwarded, body).await;
    }
    let card_call = card_call(&parts.method, &path, &body);
    if let Some(refusal) = card_call.and_then(CardCall::refusal) {
        return Err(refusal);
    }
    if card_call == Some(CardCall::Public) {
        let routed = Routed {
            forwarded: routed.forwarded.usable()?,
            ..routed
        };
        state.metrics.count_request(agent.name(), Mode::Card);
        AccessNote::noted(&parts.extensions, agent.name(), Mode::Card);
        let at = (&parts.uri, &parts.headers);
        return card::serve(
            (&state.config, state.card_signer.as_ref()),
            &agent,
            &path,
            &mount,
            at,
            &routed.forwarded,
        )
        .await;
    }
    match negotiated(&parts, &path, &body)? {
        Negotiated::RunAgentInput => {
            agui_input(state, agent, &parts, routed.forwarded, body, Mode::Agui).await
        }
        Negotiated::NotConvertible => {
            state.metrics.count_request(agent.name(), Mode::Passthrough);
            AccessNote::noted(&parts.extensions, agent.name(), Mode::Passthrough);
            let routed = Routed {
                forwarded: routed.forwarded.usable()?,
                ..routed
            };
            if let Some(CardCall::Extended(kind)) = card_call {
                return card::serve_extended(
                    (&state.config, state.card_signer.as_ref()),
                    &agent,
                    kind,
                    (parts.method.clone(), routed.url, body),
                    (&parts.uri, &parts.headers, &mount),
                    &routed.forwarded,
                )
                .await;
            }
            let public = card::public_base(&state.config, &parts.uri, &parts.headers);
            let call = Passthrough {
                method: parts.method.clone(),
                url: routed.url,
                body,
                gateway_base: format!("{public}{mount}"),
            };
            passthrough(&state, &agent, call, &routed.forwarded).await
        }
        Negotiated::Forward => convert(state, agent, &parts, routed, body, None).await,
        Negotiated::Build(message) => {
            convert(state, agent, &parts, routed, body, Some(message)).await
        }
    }
}

/// Where a request to an agent goes, once the caller may use it.
struct Routed {
    /// Below the agent's base (`outbound::target`).
    url: url::Url,
    /// The client's headers as the agent's policy forwards them.
    forwarded: Forwarded,
}

/// The route phase: the caller's `allow`, the target URL, the headers.
async fn route(
    state: &AppState,
    agent: &Agent,
    path: &str,
    parts: &axum::http::request::Parts,
) -> Result<Routed, ApiError> {
    gate::allowed(state, &parts.extensions, agent)?;
    let url = outbound::target(agent, path, parts.uri.query())?;
    let forwarded = Forwarded::new(agent, &parts.headers, parts.extensions.get())
        .traced(parts.extensions.get())
        .authorized(agent, parts.extensions.get())
        .await;
    Ok(Routed { url, forwarded })
}

/// The negotiate phase: what a request that is no card wants. Without
/// `Accept: application/x-agui-events` or `?format=` it passes through.
fn negotiated(
    parts: &axum::http::request::Parts,
    path: &str,
    body: &Bytes,
) -> Result<Negotiated, ApiError> {
    if wants_agui(&parts.headers, parts.uri.query()) {
        negotiate(&parts.method, path, body)
    } else {
        Ok(Negotiated::NotConvertible)
    }
}

/// The call and relay phases of a converted A2A call: a reconnect
/// continues its run; otherwise the call is forwarded as it came (`seed`
/// none) or built from the seed's message, and its answer relayed.
async fn convert(
    state: AppHandle,
    agent: Arc<Agent>,
    parts: &axum::http::request::Parts,
    routed: Routed,
    body: Bytes,
    seed: Option<Box<crate::upstream::OutgoingMessage>>,
) -> Result<Response, ApiError> {
    let run_by = run_by(&agent, &gate::scope(&parts.extensions), parts, &body);
    if let Some(resumed) = resume::reconnect(&state, &parts.headers, &run_by.owner).await? {
        return Ok(resumed);
    }
    gate::budget(&state, &agent, &run_by.caller).await?;
    state.metrics.count_request(agent.name(), Mode::Converted);
    let conversion = Conversion {
        options: Options {
            interrupts: agent.config.interrupts,
            ..Options::default()
        },
        format: output_format(parts.uri.query(), agent.config.format),
        on_end: None,
        on_delivered: None,
        on_usage: state.charger(&run_by.caller),
        access: AccessNote::noted(&parts.extensions, agent.name(), Mode::Converted),
        tap: false,
    };
    let Routed { url, forwarded } = routed;
    let limit = state.config.limits.max_event_bytes;
    let call = async {
        let route = agent.route().await;
        match seed {
            None => {
                let to = (parts.method.clone(), url);
                RunCalled::as_is(agent.forward(&route, to, &forwarded, body).await)
            }
            Some(message) => {
                // Extensions in the seed's message are not activated: a
                // client wanting that sends the header itself.
                agent.run(route, (&message, &[]), &forwarded, limit).await
            }
        }
    };
    let identity = RunIdentity {
        owner: run_by.owner,
        thread: None,
    };
    // Boxed, as `agui::run` boxes them.
    let opened = relay::open(
        &state,
        agent.clone(),
        forwarded.clone(),
        Box::pin(call),
        conversion,
        identity,
    );
    Ok(Box::pin(opened).await?)
}

/// A request passed through as it came.
struct Passthrough {
    method: Method,
    url: url::Url,
    body: Bytes,
    /// Where the agent is mounted on the gateway, as the client sees it.
    gateway_base: String,
}

/// Transparent mode: the request as it came, the response as it comes
/// back, byte for byte; of its headers, hop-by-hop ones and what the edge
/// owns change (`headers::returned_headers`).
async fn passthrough(
    state: &AppState,
    agent: &Agent,
    call: Passthrough,
    forwarded: &Forwarded,
) -> Result<Response, ApiError> {
    // Passed-through streams count under `max_streams` as converted ones do.
    let permit = state.stream_permit(agent.name())?;
    let Passthrough {
        method,
        url,
        body,
        gateway_base,
    } = call;
    let started = Instant::now();
    let Called { answer, span } = agent.pass((method, url), forwarded, body, None).await;
    let upstream = answer.map_err(|err| {
        tracing::warn!(agent = agent.name(), "passthrough call failed: {err:?}");
        span.fail("unreachable");
        let (code, message) = relay::unreachable(&err);
        let status = if code == ErrorCode::UpstreamTimeout {
            StatusCode::GATEWAY_TIMEOUT
        } else {
            StatusCode::BAD_GATEWAY
        };
        state.metrics.count_error(agent.name(), code.as_str());
        ApiError::new(status, code, message)
    })?;
    state
        .metrics
        .observe_upstream_latency(agent.name(), started.elapsed());
    let status = upstream.status;
    span.answered(status);
    let upstream_base = crate::upstream::target::base_url(&agent.config.upstream);
    let rewrite = |url: &str| card::rewrite_url(url, &upstream_base, &gateway_base);
    let policy = ReturnPolicy {
        cookies: agent.config.forward.cookie,
        rewrite: &rewrite,
    };
    let headers = returned_headers(&upstream.headers, &policy);
    let stop = state.shutdown.stop.clone();
    let body = head_first(upstream.body)
        .take_until(async move { stop.cancelled().await })
        .map(move |chunk| {
            // The place under `max_streams` and the call's span live as
            // long as the body.
            let _held = (&permit, &span);
            chunk
        });
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
