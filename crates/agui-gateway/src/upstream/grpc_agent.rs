//! An agent whose configuration names A2A's gRPC binding (`a2a_grpc`):
//! its client made from the agent's configuration, connecting with the
//! rustls configuration of the agent's reloadable clients (`tls`), as
//! the channels its card's gRPC interfaces open do.

use std::sync::Arc;

use a2a_grpc::{GrpcAgent, Service};

use super::tls;
use crate::config::{A2aVersion, AgentConfig, Binding, Limits};

impl a2a_grpc::ClientTls for tls::Reloadable {
    fn client_config(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.get().grpc_tls.clone()
    }
}

/// The gRPC client of an agent whose upstream is `grpc://` or `grpcs://`,
/// or whose `binding` is pinned to gRPC (at the upstream's host and port);
/// `None` for any other.
pub fn client(
    config: &AgentConfig,
    limits: &Limits,
    clients: &Arc<tls::Reloadable>,
) -> Result<Option<GrpcAgent>, tls::ClientError> {
    let pinned = config.reach.binding == Some(Binding::Grpc);
    if !pinned && !matches!(config.upstream.scheme(), "grpc" | "grpcs") {
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
