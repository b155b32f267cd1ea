//! The gRPC binding: a `Call` as the call of the agent's service
//! (`a2a_grpc::ServiceCall`), answered as its JSON-RPC answer would have
//! been (`a2a_grpc::GrpcAgent::call`): the converter reads that alike.

use a2a_grpc::dialect::Dialect;
use a2a_grpc::{GrpcAgent, JsonRpcAnswer, JsonRpcBody, ServiceCall};
use axum::http::{HeaderMap, StatusCode};
use futures::TryStreamExt;
use serde_json::Value;
use tonic::Code;

use crate::config::Mode;
use crate::upstream::route::Route;
use crate::upstream::rpc::Call;
use crate::upstream::rpc::{TaskCall, list_params, send_params};
use crate::upstream::{BodyError, StreamResponse, UpstreamError};

pub fn service_call(route: &Route, call: &Call<'_>) -> ServiceCall {
    match call {
        Call::Send { message, .. } => ServiceCall::Send {
            streaming: route.mode == Mode::Stream,
            params: send_params(route.version(), message, route.mode),
        },
        Call::Task(TaskCall::Get, task) => ServiceCall::Get {
            id: (*task).to_owned(),
            history_length: None,
        },
        Call::Task(TaskCall::Cancel, task) => ServiceCall::Cancel {
            id: (*task).to_owned(),
        },
        Call::Task(TaskCall::Subscribe, task) => ServiceCall::Subscribe {
            id: (*task).to_owned(),
        },
        Call::List {
            context,
            page_token,
        } => ServiceCall::List {
            params: list_params(*context, page_token),
        },
    }
}

/// Makes the call; a unary one within `deadline`. A call not made (no
/// connection, a failed handshake) is the gateway's error, as for an HTTP
/// agent not reached.
pub async fn send(
    grpc: &GrpcAgent,
    call: ServiceCall,
    (id, dialect): &(String, Dialect),
    headers: &HeaderMap,
    deadline: Option<std::time::Duration>,
) -> Result<StreamResponse, UpstreamError> {
    let id = Value::String(id.clone());
    answered(grpc.call(call, (id, *dialect), headers, deadline).await)
}

/// A client's JSON-RPC call, made as the call of the agent's service it
/// stands for (`GrpcAgent::execute`).
pub async fn send_json_rpc(
    grpc: &GrpcAgent,
    body: &[u8],
    headers: &HeaderMap,
    deadline: std::time::Duration,
) -> Result<StreamResponse, UpstreamError> {
    answered(grpc.execute(body, headers, Some(deadline)).await)
}

fn answered(answer: JsonRpcAnswer) -> Result<StreamResponse, UpstreamError> {
    if let JsonRpcBody::Unreachable(cause) = answer.body {
        return Err(UpstreamError::Grpc(cause));
    }
    Ok(StreamResponse {
        status: StatusCode::OK,
        unauthenticated: answer.refused_with == Some(Code::Unauthenticated),
        busy: answer.refused_with.is_some_and(|code| {
            [
                Code::Unavailable,
                Code::ResourceExhausted,
                Code::DeadlineExceeded,
                Code::Aborted,
            ]
            .contains(&code)
        }),
        headers: answer.headers.clone(),
        body: Box::pin(answer.into_stream().map_err(BodyError::Grpc)),
        handed_one_by_one: false,
    })
}
