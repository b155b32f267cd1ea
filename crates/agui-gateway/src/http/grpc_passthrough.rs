//! gRPC passthrough: an A2A gRPC client's call (HTTP/2,
//! `application/grpc`) goes to its agent's gRPC interface as it came,
//! after the same edge as any call (the gate's credentials, rates and
//! draining; `max_request_bytes`; `max_streams`; the forwarding policy's
//! headers). GRPC clients reach the default agent at the root (gRPC has no
//! path prefix), a named one at `/v1/agents/{name}/{service}/{method}`
//! where a client can send a prefix.
//!
//! Every refusal a gRPC caller gets is a gRPC status (`answers`): a gRPC
//! client shows an HTTP error body as an opaque transport failure.

use a2a_grpc::cards::{self, GatewayAddresses};
pub use a2a_grpc::passthrough::is_grpc;
use a2a_grpc::passthrough::{self, Method, of_http, trailers_only};
use a2a_grpc::{v03, v10};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;
use serde_json::Value;
use tonic::Code;

use super::card;
use super::error::ApiError;
use crate::obs::access::{AccessNote, Mode};
use crate::state::AppState;
use crate::upstream::Agent;
use crate::upstream::headers::{ReturnPolicy, returned_headers};
use crate::upstream::outbound::Forwarded;

/// An answer as `a2a_grpc::passthrough` makes it (tonic's body), before
/// it is the router's.
type PassedResponse = axum::http::Response<tonic::body::Body>;

/// How much of a refusal's JSON body is read to say it as a gRPC status.
const REFUSAL_BYTES: usize = 16 * 1024;

/// A gRPC call to `agent`, `path` below its mount.
pub async fn call(
    state: &AppState,
    agent: &Agent,
    (parts, path, mount): (&Parts, &str, &str),
    forwarded: Forwarded,
    body: Bytes,
) -> Result<Response, ApiError> {
    if parts.version != Version::HTTP_2 {
        return Ok(trailers_only(
            Code::Unimplemented,
            "client: gRPC needs HTTP/2",
        ));
    }
    let Some(grpc) = agent.grpc_channel() else {
        return Ok(trailers_only(
            Code::Unimplemented,
            "the agent is not reached over gRPC here: use its JSON-RPC or HTTP+JSON interface",
        ));
    };
    let Some(method) = Method::of_path(path) else {
        return Ok(trailers_only(
            Code::Unimplemented,
            "client: no such A2A method",
        ));
    };
    let forwarded = forwarded.usable()?;
    let mode = if method.is_card() {
        Mode::Card
    } else {
        Mode::Passthrough
    };
    state.metrics.count_request(agent.name(), mode);
    AccessNote::noted(&parts.extensions, agent.name(), mode);
    let (metadata, span) = forwarded.for_call(agent);
    let bounds = passthrough::Bounds {
        idle: agent.config.idle_timeout,
        stop: state.shutdown.stop.clone(),
    };
    let cookies = agent.config.forward.cookie;
    if method.is_card() {
        let public = card::public_base(&state.config, &parts.uri, &parts.headers);
        let answer = grpc
            .pass_collected(&method, &parts.headers, metadata, body, bounds)
            .await;
        let answer = served_card(&method, answer, &public, mount).map(Body::new);
        return Ok(returned(answer, cookies, ()));
    }
    let permit = state.stream_permit(agent.name())?;
    let answer = grpc
        .pass(&method, &parts.headers, metadata, body, bounds)
        .await
        .map(Body::new);
    span.answered(StatusCode::OK);
    // The place under `max_streams` and the call's span live as long as
    // the answer.
    Ok(returned(answer, cookies, (permit, span)))
}

/// The agent's answer as the client gets it: its head and its trailers
/// through the one policy of passed-through answers
/// (`headers::returned_headers`: no `Set-Cookie` unless the agent takes
/// cookies, none of the edge's own headers, nothing hop-by-hop); the
/// gRPC status and the agent's own metadata pass. `held` lives as long as
/// the body.
fn returned<H: Send + Sync + 'static>(answer: Response, cookies: bool, held: H) -> Response {
    let policy = move |headers: &HeaderMap| {
        let policy = ReturnPolicy {
            cookies,
            rewrite: &|_| None,
        };
        returned_headers(headers, &policy)
    };
    let (mut head, body) = answer.into_parts();
    head.headers = policy(&head.headers);
    if head.headers.contains_key("grpc-status") {
        // Trailers-only: an empty body, so the head ends the stream.
        return Response::from_parts(head, Body::empty());
    }
    let body = body.map_frame(move |mut frame| {
        let _held = &held;
        if let Some(trailers) = frame.trailers_mut() {
            *trailers = policy(trailers);
        }
        frame
    });
    Response::from_parts(head, Body::new(body))
}

/// A card call's answer, with the gateway's addresses in the card.
fn served_card(
    method: &Method,
    answer: Result<passthrough::Collected, PassedResponse>,
    public: &str,
    mount: &str,
) -> PassedResponse {
    let answer = match answer {
        Ok(answer) => answer,
        Err(refusal) => return refusal,
    };
    if answer.message.is_empty() {
        // The agent's error status: as it came.
        return answer.into_response(None);
    }
    let json_rpc = format!("{public}{mount}/");
    let grpc_address = cards::grpc_address(public, mount);
    let at = GatewayAddresses {
        json_rpc: &json_rpc,
        grpc: grpc_address.as_deref(),
    };
    let rewritten = answer
        .single_message()
        .and_then(|card| match method.service {
            v10::SERVICE => cards::rewrite_v10(card, &at),
            v03::SERVICE => cards::rewrite_v03(card, &at),
            _ => None,
        });
    match rewritten {
        Some(card) => answer.into_response(Some(card)),
        None => trailers_only(
            Code::Unavailable,
            "upstream: the agent's card is not one the gateway can read",
        ),
    }
}

/// The edge's refusals of a gRPC call, as gRPC statuses: the HTTP status
/// as its gRPC code, the error's code and message as the status message,
/// `Retry-After` and `WWW-Authenticate` kept. Successful answers pass
/// (a stream is never read here).
pub async fn answers(request: Request, next: Next) -> Response {
    if !is_grpc(request.headers()) {
        return next.run(request).await;
    }
    let response = next.run(request).await;
    if is_grpc(response.headers()) || response.status().is_success() {
        return response;
    }
    let status = response.status();
    let (parts, body) = response.into_parts();
    let said = axum::body::to_bytes(body, REFUSAL_BYTES)
        .await
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|json| {
            let error = json.get("error")?;
            Some(format!(
                "{}: {}",
                error.get("code")?.as_str()?,
                error.get("message")?.as_str()?
            ))
        })
        .unwrap_or_else(|| format!("HTTP {status}"));
    let mut answer = trailers_only(of_http(status), &said);
    keep(&parts.headers, answer.headers_mut());
    answer
}

fn keep(from: &HeaderMap, to: &mut HeaderMap) {
    for name in [header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        for value in from.get_all(&name) {
            to.append(name.clone(), value.clone());
        }
    }
}
