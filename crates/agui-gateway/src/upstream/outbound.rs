//! Every call the gateway makes to an upstream agent is built here: where
//! it goes (`target`), which headers go with it (`forwarding`, one policy
//! for all), and what each kind of call changes on top. Side by side, the
//! differences are visible, and deliberate:
//!
//! | call                             | on top of the forwarded headers                    |
//! |----------------------------------|----------------------------------------------------|
//! | passthrough                      | nothing: the client negotiates with the agent      |
//! | converted, forwarded as sent     | the gateway's `Accept`, `Accept-Encoding: identity`|
//! | converted, body by the gateway   | same, and its own `Content-Type`                   |
//! | agent card                       | a GET: no body headers; `Accept-Encoding: identity`|
//! | cancel after a disconnect        | the run's headers, with its own JSON body          |

use a2a_agui::ErrorCode;
use agui_edge::auth::{Principal, bearer_token};
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use reqwest::RequestBuilder;
use serde_json::Value;
use url::Url;

use crate::config::Secret;
use crate::obs::telemetry::{CallSpan, SharedTrace};
use crate::random::random_u64;
use crate::upstream::answer::{Answer, Growing};
use crate::upstream::credentials::{Refused, TokenError, says_invalid_token};
use crate::upstream::headers::{Caller, upstream_headers};
use crate::upstream::target::{PathError, base_url, upstream_url};
use crate::upstream::{
    Agent, OutgoingMessage, TaskCall, list_tasks_request, streaming_request, task_request,
};

/// A call ready to be sent, and its client span: held by whoever reads the
/// answer, for as long as it is read (dropping it ends the span).
#[must_use]
pub struct Outgoing {
    pub request: RequestBuilder,
    pub span: CallSpan,
    /// Set when the call carries a token the gateway got: how to try once
    /// more after the agent refuses it.
    pub renewal: Option<Renewal>,
}

impl Outgoing {
    fn new(request: RequestBuilder, span: CallSpan, renewal: Option<Renewal>) -> Outgoing {
        Outgoing {
            request,
            span,
            renewal,
        }
    }
}

/// A call's token and whose it is: what a 401 from the agent renews.
#[derive(Clone)]
pub struct Renewal {
    subject: Option<Secret>,
    bearer: Secret,
}

impl Renewal {
    /// `spare` (a copy of a call the agent answered 401, with `challenge`,
    /// the answer's headers) with another token: one renewed meanwhile,
    /// or a new one when the refused token is its likely cause
    /// (`Credentials::renewed`); `None` when the 401 stands. Once per
    /// call: the answer to this one is final.
    pub async fn retried(
        &self,
        agent: &Agent,
        mut spare: reqwest::Request,
        challenge: &HeaderMap,
    ) -> Option<reqwest::Request> {
        let subject = self.subject.as_ref().map(Secret::expose);
        let refused = Refused {
            token: &self.bearer,
            invalid_token: says_invalid_token(challenge),
        };
        let token = agent.renewed_token(subject, &refused).await?;
        tracing::info!(
            agent = agent.name(),
            "the agent refused the gateway's token (401): sending the call again with a new one"
        );
        spare
            .headers_mut()
            .insert(header::AUTHORIZATION, bearer_value(&token)?);
        Some(spare)
    }
}

/// `Authorization: Bearer <token>`, marked sensitive (never logged by the
/// HTTP stack).
pub(super) fn bearer_value(token: &Secret) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Sends a call; a 401 to a call carrying the gateway's token is sent once
/// more with a new token (`Renewal`).
pub async fn send(
    agent: &Agent,
    request: RequestBuilder,
    renewal: Option<&Renewal>,
) -> Result<reqwest::Response, reqwest::Error> {
    let (client, request) = request.build_split();
    let request = request?;
    if let Some(grpc) = &agent.grpc {
        let body = request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .unwrap_or_default();
        let deadline = Some(agent.config.idle_timeout);
        let answer = grpc.execute(body, request.headers(), deadline).await;
        return Ok(crate::upstream::grpc_agent::as_reqwest(answer));
    }
    let spare = renewal.and_then(|_| request.try_clone());
    let response = client.execute(request).await?;
    if response.status() == reqwest::StatusCode::UNAUTHORIZED
        && let (Some(renewal), Some(spare)) = (renewal, spare)
        && let Some(again) = renewal.retried(agent, spare, response.headers()).await
    {
        return client.execute(again).await;
    }
    Ok(response)
}

/// What the relay can read: an A2A stream, or one JSON answer.
const CONVERTED_ACCEPT: &str = "text/event-stream, application/json";

/// The headers of one client request that go to one agent, worked out once
/// by the forwarding policy and used for every call of the run, the cancel
/// after a disconnect included; and the request's trace, under which each
/// call that is really made gets a client span of its own.
#[derive(Debug, Clone)]
pub struct Forwarded {
    headers: HeaderMap,
    trace: Option<SharedTrace>,
    /// The token the gateway got for the agent (`Agent::credentials`),
    /// sent as `Authorization` on every call of the request; never
    /// journaled.
    bearer: Option<Secret>,
    /// The caller's bearer token, kept out of the headers when the agent
    /// has credentials of its own: what a token exchange trades.
    subject: Option<Secret>,
    /// Why the agent may not be called (`authorized`).
    refusal: Option<Refusal>,
}

/// Why a request's agent may not be called: its code (upstream side) and
/// the client's message.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Forwarded {
    pub fn new(agent: &Agent, incoming: &HeaderMap, caller: Option<&Caller>) -> Forwarded {
        let mut headers = upstream_headers(
            incoming,
            caller,
            &agent.config.forward,
            &agent.configured_headers,
            &agent.via,
        );
        // An agent the gateway holds credentials for never gets the
        // caller's own token (its audience is the gateway): it is kept
        // aside, what a token exchange trades once `authorized` knows it
        // was verified.
        let subject = match agent.credentials.is_some() {
            true => bearer_token(incoming).map(Secret::new),
            false => None,
        };
        if agent.credentials.is_some() {
            headers.remove(header::AUTHORIZATION);
        }
        Forwarded {
            headers,
            trace: None,
            bearer: None,
            subject,
            refusal: None,
        }
    }

    /// Gets the agent's token for this request's calls (the gateway's own,
    /// or the caller's exchanged), when the agent has credentials.
    pub async fn authorize(&mut self, agent: &Agent) -> Result<(), TokenError> {
        let subject = self.subject.as_ref().map(Secret::expose);
        if let Some(token) = agent.token(subject).await {
            self.bearer = Some(token?);
        }
        Ok(())
    }

    /// Whether the agent may be called for a request the gate let in, and
    /// with what: under `card_signatures = "require"` its card must verify
    /// (else `UPSTREAM_CARD_UNTRUSTED`), and `authorize` must get its token
    /// (else `UPSTREAM_AUTH_FAILED`). A refusal is kept, not returned: a
    /// run shows it as its `RUN_ERROR` (AG-UI clients report a failed run,
    /// not a transport error), any other call as a 502 (`usable`). Only a
    /// caller's JWT the gate verified (`Principal::Subject`) is a subject
    /// to exchange: an API key sent as a bearer token is the gateway's
    /// business alone.
    pub async fn authorized(mut self, agent: &Agent, principal: Option<&Principal>) -> Forwarded {
        if !matches!(principal, Some(Principal::Subject(_))) {
            self.subject = None;
        }
        if let Some(reason) = agent.untrusted().await {
            self.refusal = Some(Refusal {
                code: ErrorCode::UpstreamCardUntrusted,
                message: reason.to_owned(),
            });
            return self;
        }
        if let Err(err) = self.authorize(agent).await {
            tracing::warn!(agent = agent.name(), "no token for the agent: {err}");
            self.refusal = Some(Refusal {
                code: ErrorCode::UpstreamAuthFailed,
                message: format!("no token for the upstream agent: {err}"),
            });
        }
        self
    }

    /// Why the agent may not be called for this request, if it may not.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.refusal.as_ref()
    }

    /// The request's headers for a call that is not a run: a refusal is
    /// the client's answer, before any call.
    pub fn usable(self) -> Result<Forwarded, Refusal> {
        match self.refusal {
            None => Ok(self),
            Some(refusal) => Err(refusal),
        }
    }

    /// How a call of this request tries again after a 401.
    fn renewal(&self) -> Option<Renewal> {
        Some(Renewal {
            subject: self.subject.clone(),
            bearer: self.bearer.clone()?,
        })
    }

    /// The calls carry the request's trace. The spans are opened as the
    /// calls are built, not here: a request answered without calling (a
    /// reconnect from the journal, a refused body) has none. A run taken
    /// over from another replica has no trace: its calls carry the trace
    /// headers the policy let through, as without an exporter.
    pub fn traced(mut self, trace: Option<&SharedTrace>) -> Forwarded {
        self.trace = trace.cloned();
        self
    }

    /// The headers of one call to `agent`: with a client span of its own
    /// as `traceparent` when spans are exported (else the client's, as the
    /// policy forwarded it).
    pub fn for_call(&self, agent: &Agent) -> (HeaderMap, CallSpan) {
        let mut headers = self.headers.clone();
        if let Some(value) = self.bearer.as_ref().and_then(bearer_value) {
            headers.insert(header::AUTHORIZATION, value);
        }
        let span = match &self.trace {
            Some(trace) => trace.call_upstream(agent.name(), &mut headers),
            None => CallSpan::default(),
        };
        (headers, span)
    }

    /// The headers as the shared journal keeps them for a takeover: the
    /// client's only (the agent's configured headers, secrets among them,
    /// are the replica's own and added back by `restore`); values that
    /// are not text are left out.
    pub fn for_journal(&self, agent: &Agent) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter(|(name, _)| {
                *name != header::VIA && !agent.configured_headers.iter().any(|(n, _)| n == *name)
            })
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
            .collect()
    }

    /// A run's headers on the replica taking it over: the journal's
    /// client headers through this agent's policy again, this replica's
    /// configured headers and `Via`. Never a subject to exchange: nothing
    /// the journal holds was verified here.
    pub fn restore(agent: &Agent, pairs: &[(String, String)]) -> Forwarded {
        let mut incoming = HeaderMap::new();
        for (name, value) in pairs {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                incoming.append(name, value);
            }
        }
        let mut forwarded = Forwarded::new(agent, &incoming, None);
        forwarded.subject = None;
        forwarded
    }

    /// Without the headers that describe the client's body or what the
    /// client accepts: for calls whose body and answer are the gateway's.
    fn for_gateway_body(&self, agent: &Agent) -> (HeaderMap, CallSpan) {
        let (mut headers, span) = self.for_call(agent);
        for name in [
            header::CONTENT_TYPE,
            header::CONTENT_ENCODING,
            header::ACCEPT,
            header::ACCEPT_ENCODING,
        ] {
            headers.remove(name);
        }
        (headers, span)
    }
}

/// The URL of `path` below the agent's base, or the rule it breaks.
/// Worked out once per request, before anything else: a call the gateway
/// writes itself ignores the path, but a path naming another origin is an
/// attack, not a route, whatever the call becomes.
pub fn target(agent: &Agent, path: &str, query: Option<&str>) -> Result<Url, PathError> {
    upstream_url(&agent.config.upstream, path, query)
}

/// Transparent mode: the request as it came, to the same path upstream.
pub fn passthrough(
    agent: &Agent,
    method: Method,
    url: Url,
    forwarded: &Forwarded,
    body: Bytes,
) -> Outgoing {
    let (headers, span) = forwarded.for_call(agent);
    let request = agent
        .client()
        .request(method, url)
        .headers(headers)
        .body(body);
    Outgoing::new(request, span, forwarded.renewal())
}

/// A client's own A2A call whose answer the gateway converts.
pub fn forward(
    agent: &Agent,
    method: Method,
    url: Url,
    forwarded: &Forwarded,
    body: Bytes,
) -> Outgoing {
    let (mut headers, span) = forwarded.for_call(agent);
    converted(&mut headers);
    if names_a_1_0_method(&body) && !headers.contains_key("a2a-version") {
        speaks_1_0(&mut headers);
    }
    let request = agent
        .stream_client()
        .request(method, url)
        .headers(headers)
        .body(body);
    Outgoing::new(request, span, forwarded.renewal())
}

/// A streaming call the gateway writes itself (from the seed's body or a
/// `RunAgentInput`), to the endpoint and in the dialect the card names.
/// `activate` lists the A2A extensions to ask the agent to turn on.
pub async fn build(
    agent: &Agent,
    forwarded: &Forwarded,
    message: &OutgoingMessage,
    rpc_id: &str,
    activate: &[String],
) -> Outgoing {
    let (url, version) = agent.endpoint().await;
    let (body, v10) = streaming_request(version, message, rpc_id);
    let (mut headers, span) = forwarded.for_gateway_body(agent);
    converted(&mut headers);
    if v10 {
        speaks_1_0(&mut headers);
    }
    if !activate.is_empty()
        && let Ok(list) = HeaderValue::from_str(&activate.join(","))
    {
        // Both spellings: 1.0 renamed the 0.3 header.
        headers.insert("a2a-extensions", list.clone());
        headers.insert("x-a2a-extensions", list);
    }
    Outgoing::new(
        agent.stream_client().post(url).headers(headers).json(&body),
        span,
        forwarded.renewal(),
    )
}

/// A call about one task (cancel, resubscribe, read), with the run's own
/// headers (the user's credentials included, as the policy allows).
pub async fn task_call(
    agent: &Agent,
    forwarded: &Forwarded,
    call: TaskCall,
    task: &str,
) -> Outgoing {
    let (url, version) = agent.endpoint().await;
    let rpc_id = format!("agui-gateway-{:x}", random_u64());
    let (body, v10) = task_request(version, call, task, &rpc_id);
    let (mut headers, span) = forwarded.for_gateway_body(agent);
    if v10 {
        speaks_1_0(&mut headers);
    }
    let client = if call == TaskCall::Subscribe {
        converted(&mut headers);
        agent.stream_client()
    } else {
        agent.client()
    };
    Outgoing::new(
        client.post(url).headers(headers).json(&body),
        span,
        forwarded.renewal(),
    )
}

/// One page of a context's tasks (A2A 1.0 `ListTasks`), with the
/// request's headers as the policy forwards them: the agent shows the
/// caller only what it would show the caller's own `ListTasks`.
pub async fn list_tasks(
    agent: &Agent,
    forwarded: &Forwarded,
    context: Option<&str>,
    page_token: &str,
) -> Outgoing {
    let (url, _) = agent.endpoint().await;
    let rpc_id = format!("agui-gateway-{:x}", random_u64());
    let body = list_tasks_request(context, page_token, &rpc_id);
    let (mut headers, span) = forwarded.for_gateway_body(agent);
    speaks_1_0(&mut headers);
    Outgoing::new(
        agent.client().post(url).headers(headers).json(&body),
        span,
        forwarded.renewal(),
    )
}

impl Outgoing {
    /// Sends the call and reads its whole answer, when it succeeds, within
    /// `limit` bytes and the budget of answers read at once
    /// (`answer::Growing`, checked as it arrives) and the agent's idle
    /// timeout.
    pub async fn answer(self, agent: &Agent, limit: usize) -> Option<Answer> {
        let Outgoing {
            request,
            span,
            renewal,
        } = self;
        let read = async {
            let Ok(response) = send(agent, request, renewal.as_ref()).await else {
                span.fail("unreachable");
                return None;
            };
            span.answered(response.status());
            if !response.status().is_success() {
                return None;
            }
            let mut body = response.bytes_stream();
            let mut document = Growing::default();
            while let Some(chunk) = futures::StreamExt::next(&mut body).await {
                document.extend(&chunk.ok()?, limit).ok()?;
            }
            Some(document.done())
        };
        tokio::time::timeout(agent.config.idle_timeout, read)
            .await
            .ok()?
    }
}

/// Cancels a task (its client went away, or cancelled an interrupt).
pub async fn cancel(agent: &Agent, forwarded: &Forwarded, task: &str) -> Outgoing {
    task_call(agent, forwarded, TaskCall::Cancel, task).await
}

/// The agent card at `path` below the upstream's base.
pub fn card(agent: &Agent, path: &str, forwarded: &Forwarded) -> Result<Outgoing, PathError> {
    let url = upstream_url(&base_url(&agent.config.upstream), path, None)?;
    let (mut headers, span) = forwarded.for_gateway_body(agent);
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    Ok(Outgoing::new(
        agent.client().get(url).headers(headers),
        span,
        forwarded.renewal(),
    ))
}

/// A converted call: the gateway reads the answer itself, so it, not the
/// client, says what it accepts, and asks for no compression (the
/// converter needs plain bytes).
fn converted(headers: &mut HeaderMap) {
    // The client's place in the gateway's stream, not in the agent's.
    headers.remove("last-event-id");
    headers.insert(header::ACCEPT, HeaderValue::from_static(CONVERTED_ACCEPT));
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

/// A 1.0 server takes a call without `A2A-Version` for a 0.3 one.
fn speaks_1_0(headers: &mut HeaderMap) {
    headers.insert("a2a-version", HeaderValue::from_static("1.0"));
}

/// 1.0 JSON-RPC method names are PascalCase (`SendStreamingMessage`), 0.3
/// ones are not (`message/stream`).
fn names_a_1_0_method(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("method")
                .and_then(Value::as_str)
                .map(|m| m.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .unwrap_or(false)
}
