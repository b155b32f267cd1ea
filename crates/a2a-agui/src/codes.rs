//! The stable error codes, one list for the converter and the gateway.
//!
//! A code is what a client or an alert matches on, so it never changes once
//! written: `RUN_ERROR.code` inside a stream, `error.code` in a JSON error
//! body before one. Errors an agent reports itself carry `A2A_<reason>`
//! codes instead (see [`ErrorReport`](crate::ErrorReport)); those are open
//! ended and stay strings.

use std::fmt;

/// Which side of the gateway a failure belongs to: what a client needs to
/// know to decide whether to retry, fix its request or page someone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The request was wrong; sending it again will not help.
    Client,
    /// The agent behind the gateway failed or could not be reached.
    Upstream,
    /// The gateway itself refused or gave up (busy, draining).
    Gateway,
}

impl Side {
    /// The spelling used in JSON error bodies (`"side": "client"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Upstream => "upstream",
            Side::Gateway => "gateway",
        }
    }
}

macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, $side:ident;)*) => {
        /// Every code this project writes itself.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in declaration order (for documentation and counters).
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }

            /// Who failed.
            pub const fn side(self) -> Side {
                match self {
                    $(ErrorCode::$variant => Side::$side,)*
                }
            }
        }
    };
}

error_codes! {
    /// The agent reported the task as failed.
    TaskFailed = "A2A_TASK_FAILED", Upstream;
    /// The agent rejected the task.
    TaskRejected = "A2A_TASK_REJECTED", Upstream;
    /// The agent reported an error without a reason the converter knows.
    AgentError = "A2A_ERROR", Upstream;
    /// An upstream event is not valid JSON (or not UTF-8).
    MalformedEvent = "A2A_MALFORMED_EVENT", Upstream;
    /// An ACP run failed without a code of its own.
    AcpRunFailed = "ACP_RUN_FAILED", Upstream;
    /// The upstream closed the stream before the task reached a final state.
    UpstreamEndedEarly = "UPSTREAM_ENDED_EARLY", Upstream;
    /// The upstream closed the stream without sending any event.
    UpstreamEmpty = "UPSTREAM_EMPTY", Upstream;
    /// One upstream event (or a whole JSON body) exceeded the size limit.
    UpstreamEventTooLarge = "UPSTREAM_EVENT_TOO_LARGE", Upstream;
    /// The upstream could not be connected to.
    UpstreamUnreachable = "UPSTREAM_UNREACHABLE", Upstream;
    /// The upstream sent no response headers in time.
    UpstreamTimeout = "UPSTREAM_TIMEOUT", Upstream;
    /// The upstream stayed silent longer than the idle timeout.
    UpstreamIdleTimeout = "UPSTREAM_IDLE_TIMEOUT", Upstream;
    /// Reading the upstream response failed mid-way.
    UpstreamReadError = "UPSTREAM_READ_ERROR", Upstream;
    /// The upstream answered a non-2xx status without an A2A error body.
    UpstreamHttpError = "UPSTREAM_HTTP_ERROR", Upstream;
    /// The upstream serves no usable agent card.
    UpstreamCardUnavailable = "UPSTREAM_CARD_UNAVAILABLE", Upstream;
    /// No token for the agent: its token endpoint refused or could not be
    /// reached (the gateway's credentials towards the agent).
    UpstreamAuthFailed = "UPSTREAM_AUTH_FAILED", Upstream;
    /// The agent's card must be signed by a trusted key and is not
    /// (`card_signatures = "require"`).
    UpstreamCardUntrusted = "UPSTREAM_CARD_UNTRUSTED", Upstream;
    /// The gateway stopped while the stream was open.
    GatewayShuttingDown = "GATEWAY_SHUTTING_DOWN", Gateway;
    /// The gateway is draining and takes no new requests.
    GatewayDraining = "GATEWAY_DRAINING", Gateway;
    /// The shared journal cannot be used as configured (`/readyz`): runs
    /// would not be shared.
    JournalUnavailable = "JOURNAL_UNAVAILABLE", Gateway;
    /// `max_streams` streams are already open, or the request bodies in
    /// flight on the client's HTTP/2 connection are at their bound.
    GatewayBusy = "GATEWAY_BUSY", Gateway;
    /// `max_connections` client connections are already open (sent on the
    /// refused connection itself, then it is closed).
    GatewayConnectionsFull = "GATEWAY_CONNECTIONS_FULL", Gateway;
    /// The request has already passed through this gateway: a routing loop.
    GatewayLoop = "GATEWAY_LOOP", Gateway;
    /// The client went away mid-stream (a metric, never sent).
    ClientDisconnected = "CLIENT_DISCONNECTED", Client;
    /// The request is not an A2A call the gateway can convert.
    InvalidRequest = "INVALID_REQUEST", Client;
    /// The body is not a usable AG-UI `RunAgentInput`.
    InvalidRunInput = "INVALID_RUN_INPUT", Client;
    /// An identifier the client sent (a thread, run, message or tool call
    /// id, an interrupt id, a tool or agent name) is longer than 1 KiB.
    IdTooLong = "ID_TOO_LONG", Client;
    /// A reconnect (`Last-Event-ID`) names an event the gateway does not
    /// keep: the run cannot be continued from it.
    RunNotResumable = "RUN_NOT_RESUMABLE", Gateway;
    /// A reconnect's `Last-Event-ID` names a run that another request (or
    /// another caller) started: a reconnect repeats its request exactly.
    RunMismatch = "RUN_MISMATCH", Client;
    /// A stop for a run whose agent has not named its task yet: there is
    /// nothing to cancel until it does (retry in a moment).
    RunNotStoppable = "RUN_NOT_STOPPABLE", Upstream;
    /// A `RunAgentInput` with nothing the agent has not had: no message
    /// after the agent's last one that was not sent already, and no `resume`.
    NoNewInput = "NO_NEW_INPUT", Client;
    /// The path cannot be forwarded: it names another origin, climbs
    /// above the agent's base, or holds a backslash or control bytes.
    InvalidPath = "INVALID_PATH", Client;
    /// `CONNECT`, `TRACE` and any method that is not a standard one in
    /// capitals (`trace`, `FOO`): the gateway is no forward proxy, echoes
    /// nothing back, and matches methods case-sensitively.
    MethodNotAllowed = "METHOD_NOT_ALLOWED", Client;
    /// The request carries `Authorization` (or `X-API-Key`) more than once.
    DuplicateCredential = "DUPLICATE_CREDENTIAL", Client;
    /// The request body did not arrive within `request_body_timeout_secs`.
    RequestTimeout = "REQUEST_TIMEOUT", Client;
    /// Authentication is configured and the request carries no credential.
    AuthRequired = "AUTH_REQUIRED", Client;
    /// The credential is unknown, expired, or for another issuer or audience.
    AuthInvalid = "AUTH_INVALID", Client;
    /// The caller is authenticated but not allowed to call this agent.
    AuthForbidden = "AUTH_FORBIDDEN", Client;
    /// The caller's rate limit is used up; `Retry-After` says when to retry.
    RateLimited = "RATE_LIMITED", Client;
    /// The caller's runs spent its token budget for the window
    /// (`token_budget`); `Retry-After` says when the window turns.
    TokenBudgetExceeded = "TOKEN_BUDGET_EXCEEDED", Client;
    /// The request body exceeds `max_request_bytes`.
    RequestTooLarge = "REQUEST_TOO_LARGE", Client;
    /// No agent has the name in the path.
    UnknownAgent = "UNKNOWN_AGENT", Client;
    /// `/v1/card-keys` on a gateway that signs no cards.
    NoCardKeys = "NO_CARD_KEYS", Client;
    /// An un-prefixed route was used but no default agent is configured.
    NoDefaultAgent = "NO_DEFAULT_AGENT", Client;
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn codes_are_unique_and_screaming_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit()),
                "{name}"
            );
        }
    }

    #[test]
    fn the_error_table_lists_every_code_with_its_side() {
        let table = include_str!("../../../docs/routes.md");
        for code in ErrorCode::ALL {
            let row = format!("| `{}` | {} |", code.as_str(), code.side().as_str());
            assert!(table.contains(&row), "docs/routes.md has no row {row}");
        }
    }
}
