//! The bindings: each writes a `Call` as its own request, and sends it.
//! JSON-RPC (`jsonrpc`) and HTTP+JSON (`rest`) are HTTP requests, sent by
//! `http` (the lean connection for streams over plain HTTP, reqwest
//! otherwise); gRPC (`grpc`) is a call of the agent's service. Every one
//! answers with a `StreamResponse` (a stream of frames, or one JSON
//! document), which the relay reads the same whichever made it. The
//! layers around a call (headers, the token and its renewal, the span)
//! are `call`'s, written once for all three.

mod grpc;
pub mod http;
mod jsonrpc;
mod rest;

use std::time::Duration;

use a2a_grpc::dialect::Dialect;
use a2a_grpc::{GrpcAgent, ServiceCall};
use axum::http::HeaderMap;

pub use self::grpc::send_json_rpc;
use self::http::HttpCall;
use super::route::Route;
use super::rpc::Call;
use super::{StreamResponse, UpstreamError};
use crate::config::{A2aVersion, Binding};

/// A call written in its binding, ready to be sent (again, with a renewed
/// token, after a refusal).
pub enum Prepared {
    Http(HttpCall),
    Grpc {
        agent: GrpcAgent,
        call: ServiceCall,
        /// The JSON-RPC id and dialect its answer is written with.
        reply: (String, Dialect),
    },
}

impl Prepared {
    /// `call` as `route`'s binding writes it.
    pub fn new(route: &Route, call: &Call<'_>, rpc_id: &str) -> Prepared {
        match (route.binding(), &route.grpc) {
            (Binding::Grpc, Some(agent)) => Prepared::Grpc {
                agent: agent.clone(),
                call: grpc::service_call(route, call),
                reply: (
                    rpc_id.to_owned(),
                    match route.version() {
                        A2aVersion::V03 => Dialect::V03,
                        _ => Dialect::V10,
                    },
                ),
            },
            (Binding::HttpJson, _) => Prepared::Http(rest::request(route, call)),
            // A gRPC route has its channel (`Agent::configured_route`, a
            // card's route); JSON-RPC is what any other is.
            _ => Prepared::Http(jsonrpc::request(route, call, rpc_id)),
        }
    }

    /// Whether the answer is a stream of events (the relay's idle timer
    /// bounds it) rather than one document.
    pub fn streams(&self) -> bool {
        match self {
            Prepared::Http(call) => call.streams,
            Prepared::Grpc { call, .. } => matches!(
                call,
                ServiceCall::Send {
                    streaming: true,
                    ..
                } | ServiceCall::Subscribe { .. }
            ),
        }
    }

    /// The headers this call adds to the request's own: the dialect's
    /// version, what an HTTP stream accepts.
    pub fn headers(&self, headers: &mut HeaderMap) {
        match self {
            Prepared::Http(call) => call.headers(headers),
            // gRPC metadata carries the service's version (`GrpcAgent`).
            Prepared::Grpc { .. } => {}
        }
    }

    /// Sends it with `headers`; a stream's head, or a document's, within
    /// `deadline`.
    pub async fn send(
        &self,
        agent: &super::Agent,
        headers: HeaderMap,
        deadline: Duration,
    ) -> Result<StreamResponse, UpstreamError> {
        match self {
            Prepared::Http(call) => http::send(agent, call, headers, deadline).await,
            Prepared::Grpc {
                agent: grpc,
                call,
                reply,
            } => {
                let unary = (!self.streams()).then_some(deadline);
                grpc::send(grpc, call.clone(), reply, &headers, unary).await
            }
        }
    }
}
