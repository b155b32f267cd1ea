//! The HTTP surface: the router and its handlers (`router`), the gate in
//! front of every route (`gate`), the path routed on and the card calls in
//! it (`paths`), what a request wants (`negotiate`), the agent card served
//! through the gateway (`card`), gRPC passthrough (`grpc_passthrough`),
//! the probes and metrics (`probes`), the inspector's page (`inspect`), and
//! the JSON error a request gets before any stream, the HTTP answer to
//! each refusal of the layers below (`error`).

mod agui_routes;
pub mod card;
mod copilotkit;
pub mod error;
pub mod gate;
mod grpc_passthrough;
pub mod inspect;
pub mod negotiate;
pub mod paths;
mod probes;
pub mod router;
