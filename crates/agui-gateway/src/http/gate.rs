//! In front of every route (inside `agui_edge::cors`): draining, loop refusal, who the caller
//! is (forwarding headers believed from trusted proxies only), its
//! credential and its rate. Which agent a caller may use is checked where
//! the agent is known (`allowed`), with the name decoded as the router
//! decodes it; a caller's token budget where a run would start (`budget`).

use std::net::{Ipv4Addr, SocketAddr};

use a2a_agui::ErrorCode;
use agui_edge::auth::{AuthError, Principal};
use agui_edge::listener::Transport;
use agui_journal::CallerDigest;
use agui_journal::replays::Reader;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Extensions, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::state::{AppHandle, AppState};
use crate::upstream::Agent;
use crate::upstream::headers::{Caller, has_looped};

/// Requests a probe handler of this listener serves: no rate limit, no
/// drain refusal (orchestrators watch a drain). With an admin listener,
/// `/readyz` and `/metrics` are not served here, so not probes here.
fn is_probe(state: &AppState, request: &Request) -> bool {
    if request.method() != Method::GET {
        return false;
    }
    match request.uri().path() {
        "/healthz" => true,
        "/readyz" | "/metrics" => state.config.admin_listen.is_none(),
        _ => false,
    }
}

pub async fn gate(
    State(state): State<AppHandle>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response {
    // Counted from admission to the answer's head: past it, a stream
    // holds its permit (`AppState::is_idle`).
    let _counted = state.shutdown.unanswered.enter();
    match admit(&state, &mut request).await {
        Ok(()) => next.run(request).await,
        Err(err) => err.into_response(),
    }
}

/// Lets a request through, with its `Caller` (and `Principal`) in its
/// extensions, or says why not.
async fn admit(state: &AppState, request: &mut Request) -> Result<(), ApiError> {
    let probe = is_probe(state, request);
    let health = probe && request.uri().path() == "/healthz";
    if state.shutdown.draining.is_cancelled() && !probe {
        // The connection goes too, so a kept-alive client's next request
        // finds another replica.
        return Err(ApiError::unavailable(
            ErrorCode::GatewayDraining,
            "the gateway is shutting down",
        )
        .with_header(header::CONNECTION, HeaderValue::from_static("close"))
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1")));
    }
    if let Some(refusal) = refused_method(request.method()) {
        return Err(refusal);
    }
    if let Some(name) = repeated_credential(request.headers()) {
        // Which of two would count is a guess every hop makes alike only
        // by luck: an agent reading the last would act on one the gateway
        // never verified.
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::DuplicateCredential,
            format!("the request has more than one {name} header"),
        ));
    }
    if has_looped(request.headers(), &state.config.gateway_id) {
        state.metrics.count_error(
            crate::obs::metrics::NO_AGENT,
            ErrorCode::GatewayLoop.as_str(),
        );
        return Err(ApiError::new(
            StatusCode::LOOP_DETECTED,
            ErrorCode::GatewayLoop,
            "the request has already passed through this gateway: an agent's upstream leads back to it",
        ));
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), |c| c.0);
    // The connection's own scheme (the listener says), never the client's
    // word: a forwarded `X-Forwarded-Proto` counts only from a trusted peer.
    let secure = request
        .extensions()
        .get::<Transport>()
        .is_some_and(|transport| transport.secure);
    let own_proto = if secure { "https" } else { "http" };
    let mut caller = Caller::from_request(
        peer,
        own_proto,
        request.headers_mut(),
        &state.config.trusted_proxies,
    );
    if health {
        request.extensions_mut().insert(caller);
        return Ok(());
    }
    let bucket = match &state.auth {
        None => format!("ip:{}", caller.ip),
        Some(auth) => match auth.authenticate(request.headers()).await {
            Ok((principal, credentials)) => {
                caller.credentials = credentials;
                let bucket = principal.bucket();
                request.extensions_mut().insert(principal);
                bucket
            }
            Err(err) => {
                // Failed attempts spend the address's tokens, on every
                // path: guessing keys is as slow as calling.
                rate(state, &format!("ip:{}", caller.ip))?;
                return Err(unauthenticated(err));
            }
        },
    };
    if !probe {
        rate(state, &bucket)?;
    }
    request.extensions_mut().insert(caller);
    Ok(())
}

/// Methods are case-sensitive (RFC 9110 9.1): `trace` is not `TRACE` but
/// an extension method, which no route serves. Only the standard methods a
/// route may take pass; `CONNECT` and `TRACE` never (no forward proxy, no
/// echo of the request's credentials).
fn refused_method(method: &Method) -> Option<ApiError> {
    let served = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
    ];
    if served.contains(method) {
        return None;
    }
    let message = if *method == Method::CONNECT || *method == Method::TRACE {
        format!("{method} is not served: this gateway is no forward proxy")
    } else {
        // The name is the client's: bounded, and quoted as data.
        let name: String = method.as_str().chars().take(32).collect();
        format!("the method {name:?} is not served (methods are case-sensitive)")
    };
    Some(ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::MethodNotAllowed,
        message,
    ))
}

/// A credential header sent more than once, if any.
fn repeated_credential(headers: &HeaderMap) -> Option<&'static str> {
    [
        (header::AUTHORIZATION, "Authorization"),
        (HeaderName::from_static("x-api-key"), "X-API-Key"),
    ]
    .into_iter()
    .find(|(name, _)| headers.get_all(name).iter().nth(1).is_some())
    .map(|(_, shown)| shown)
}

fn rate(state: &AppState, bucket: &str) -> Result<(), ApiError> {
    let Some(limiter) = &state.rate_limit else {
        return Ok(());
    };
    limiter.check(bucket).map_err(|wait| {
        state.metrics.count_error(
            crate::obs::metrics::NO_AGENT,
            ErrorCode::RateLimited.as_str(),
        );
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            format!("too many requests: retry in {} s", secs.max(1)),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(secs.max(1)))
    })
}

fn unauthenticated(err: AuthError) -> ApiError {
    let code = match err {
        AuthError::Missing => ErrorCode::AuthRequired,
        _ => ErrorCode::AuthInvalid,
    };
    ApiError::new(StatusCode::UNAUTHORIZED, code, err.to_string()).with_header(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"agui-gateway\""),
    )
}

/// Who a piece of per-caller memory belongs to: the principal's bucket,
/// or nothing with authentication off.
pub fn scope(extensions: &Extensions) -> String {
    extensions
        .get::<Principal>()
        .map(Principal::bucket)
        .unwrap_or_default()
}

/// Headers that may carry who the client is, to an agent that judges it:
/// with the gateway's authentication off they are the caller's identity.
const CREDENTIAL_HEADERS: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
];

/// Who calls, as far as runs go: the authenticated caller (`scope`), or
/// with authentication off (`scope` empty) every credential header the
/// client sent, which the agent may judge.
pub fn caller_digest(scope: &str, headers: &HeaderMap) -> CallerDigest {
    let sent = |name| headers.get_all(name).into_iter().map(HeaderValue::as_bytes);
    CallerDigest::of(scope, CREDENTIAL_HEADERS.map(|name| (name, sent(name))))
}

/// The longest a token budget's check waits for Redis before the run goes
/// on unchecked.
const BUDGET_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether `caller` may start a run of `agent` within its token budget
/// (`token_budget`): past it, 429 `TOKEN_BUDGET_EXCEEDED`, before any
/// agent call. When Redis does not answer, the run goes on (logged,
/// counted): a budget is not worth an outage.
pub async fn budget(
    state: &AppState,
    agent: &Agent,
    caller: &CallerDigest,
) -> Result<(), ApiError> {
    let Some(budgets) = &state.budgets else {
        return Ok(());
    };
    let now = agui_journal::unix_ms() / 1000;
    let tag = caller.budget_tag();
    let checked = tokio::time::timeout(BUDGET_CHECK_WAIT, budgets.check(&tag, now));
    let failure = match checked.await {
        Ok(Ok(Ok(()))) => return Ok(()),
        Ok(Ok(Err(exceeded))) => {
            state.metrics.count_budget_refusal(agent.name());
            state
                .metrics
                .count_error(agent.name(), ErrorCode::TokenBudgetExceeded.as_str());
            return Err(exceeded.into());
        }
        Ok(Err(err)) => err.to_string(),
        Err(_) => format!("no answer within {} s", BUDGET_CHECK_WAIT.as_secs()),
    };
    tracing::warn!(
        agent = agent.name(),
        "a run goes on without its caller's token budget checked: {failure}"
    );
    state.metrics.count_budget_error("check");
    Ok(())
}

/// Whose budget a thread replay counts against: the caller, or for a
/// caller with no identity, its address.
pub fn reader(caller: &CallerDigest, extensions: &Extensions) -> Reader {
    Reader::new(caller, extensions.get::<Caller>().map(|caller| caller.ip))
}

/// Whether the request's caller may use `agent` (always, with
/// authentication off).
pub fn allowed(state: &AppState, extensions: &Extensions, agent: &Agent) -> Result<(), ApiError> {
    if state.auth.is_none() {
        return Ok(());
    }
    match extensions.get::<Principal>() {
        Some(principal) if principal.may_call(&agent.config.allow) => Ok(()),
        Some(_) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::AuthForbidden,
            format!("this caller may not use agent {:?}", agent.name()),
        )),
        None => Err(unauthenticated(AuthError::Missing)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_are_told_apart_by_every_credential_header() {
        let none = HeaderMap::new();
        let anyone = caller_digest("", &none);
        let mut bearer = HeaderMap::new();
        bearer.insert("authorization", HeaderValue::from_static("Bearer x"));
        assert_ne!(anyone, caller_digest("", &bearer));
        // With an authenticated caller, the caller is the identity.
        assert_eq!(caller_digest("k", &none), caller_digest("k", &bearer));
        // Without one, any credential the agent may judge tells callers apart.
        let mut keyed = HeaderMap::new();
        keyed.insert("x-api-key", HeaderValue::from_static("k1"));
        assert_ne!(caller_digest("", &keyed), anyone);
        let mut cookie = HeaderMap::new();
        cookie.insert("cookie", HeaderValue::from_static("s=1"));
        assert_ne!(caller_digest("", &cookie), caller_digest("", &keyed));
        assert!(anyone.is_anonymous() && !caller_digest("", &cookie).is_anonymous());
    }
}
