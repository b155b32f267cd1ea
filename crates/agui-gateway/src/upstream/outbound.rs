//! What every call to an agent carries from the request that causes it:
//! the client's headers as the agent's forwarding policy lets them
//! through (`Forwarded`, worked out once per request and used for every
//! call of its run), the agent's token and how a refused one is renewed
//! (`Renewal`), why the agent may not be called (`Refusal`), where a
//! client's path goes (`target`), and the card's own request (`card`).
//! How each call is written and sent is `call`'s and `binding`'s.

use a2a_agui::ErrorCode;
use agui_edge::auth::{Principal, bearer_token};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use reqwest::RequestBuilder;
use url::Url;

use crate::config::Secret;
use crate::obs::telemetry::{CallSpan, SharedTrace};
use crate::upstream::Agent;
use crate::upstream::credentials::{Refused, TokenError, says_invalid_token};
use crate::upstream::headers::{Caller, upstream_headers};
use crate::upstream::target::{PathError, base_url, upstream_url};

/// A call's token and whose it is: what a 401 from the agent renews.
#[derive(Clone)]
pub struct Renewal {
    subject: Option<Secret>,
    bearer: Secret,
}

impl Renewal {
    /// `headers` (of a call the agent refused, with `challenge`, the
    /// answer's headers) with another token: one renewed meanwhile, or a
    /// new one when the refused token is its likely cause
    /// (`Credentials::renewed`); `None` when the refusal stands.
    pub async fn renewed(
        &self,
        agent: &Agent,
        mut headers: HeaderMap,
        challenge: &HeaderMap,
    ) -> Option<HeaderMap> {
        let subject = self.subject.as_ref().map(Secret::expose);
        let refused = Refused {
            token: &self.bearer,
            invalid_token: says_invalid_token(challenge),
        };
        let token = agent.renewed_token(subject, &refused).await?;
        tracing::info!(
            agent = agent.name(),
            "the agent refused the gateway's token: sending the call again with a new one"
        );
        headers.insert(header::AUTHORIZATION, bearer_value(&token)?);
        Some(headers)
    }
}

/// `Authorization: Bearer <token>`, marked sensitive (never logged by the
/// HTTP stack).
pub(super) fn bearer_value(token: &Secret) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
    value.set_sensitive(true);
    Some(value)
}

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
        // Boxed, the card's check and the token: every request awaits
        // this, and a future holds its awaited futures inline (issue 42).
        if let Some(reason) = Box::pin(agent.untrusted()).await {
            self.refusal = Some(Refusal {
                code: ErrorCode::UpstreamCardUntrusted,
                message: reason.to_owned(),
            });
            return self;
        }
        if let Err(err) = Box::pin(self.authorize(agent)).await {
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
    pub(super) fn renewal(&self) -> Option<Renewal> {
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
    pub(super) fn for_gateway_body(&self, agent: &Agent) -> (HeaderMap, CallSpan) {
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

/// The agent card at `path` below the upstream's base, and its span.
pub fn card(
    agent: &Agent,
    path: &str,
    forwarded: &Forwarded,
) -> Result<(RequestBuilder, CallSpan), PathError> {
    let url = upstream_url(&base_url(&agent.config.upstream), path, None)?;
    let (mut headers, span) = forwarded.for_gateway_body(agent);
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    Ok((agent.client().get(url).headers(headers), span))
}
