//! An agent reached over A2A's gRPC binding (`a2a_grpc`), as the gateway
//! holds one: its client made from the agent's configuration, connecting
//! with the rustls configuration of the agent's reloadable clients
//! (`tls`), and its answers as reqwest's for the callers that read one.

use std::sync::Arc;

use a2a_grpc::{GrpcAgent, JsonRpcAnswer, JsonRpcBody, Service};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;

use super::tls;
use crate::config::{A2aVersion, AgentConfig, Limits};

impl a2a_grpc::ClientTls for tls::Reloadable {
    fn client_config(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.get().grpc_tls.clone()
    }
}

/// The gRPC client of an agent whose upstream is `grpc://` or `grpcs://`;
/// `None` for any other.
pub fn client(
    config: &AgentConfig,
    limits: &Limits,
    clients: &Arc<tls::Reloadable>,
) -> Result<Option<GrpcAgent>, tls::ClientError> {
    if !matches!(config.upstream.scheme(), "grpc" | "grpcs") {
        return Ok(None);
    }
    let service = match config.a2a_version {
        A2aVersion::V03 => Service::V03,
        _ => Service::V10,
    };
    let agent = GrpcAgent::new(
        &config.upstream,
        service,
        (config.connect_timeout, limits.max_event_bytes),
        clients.clone(),
    )
    .map_err(|err| tls::ClientError::Build {
        agent: config.name.clone(),
        message: err.to_string(),
    })?;
    Ok(Some(agent))
}

/// The answer as reqwest's, for the callers that read one. A call not
/// made is the gateway's 502, as for an HTTP agent not reached.
pub fn as_reqwest(answer: JsonRpcAnswer) -> reqwest::Response {
    let mut status = StatusCode::OK;
    let mut headers = answer.headers;
    let body = match answer.body {
        JsonRpcBody::Json(bytes) => reqwest::Body::from(bytes),
        JsonRpcBody::Stream(frames) => reqwest::Body::wrap_stream(frames),
        JsonRpcBody::Unreachable(cause) => {
            tracing::debug!("gRPC call not made: {cause}");
            status = StatusCode::BAD_GATEWAY;
            headers = HeaderMap::new();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            let code = a2a_agui::ErrorCode::UpstreamUnreachable;
            let body = json!({ "error": {
                "code": code.as_str(),
                "message": "the upstream agent could not be connected to",
                "side": code.side().as_str(),
            } });
            reqwest::Body::from(body.to_string())
        }
    };
    let mut response = axum::http::Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    reqwest::Response::from(response)
}
