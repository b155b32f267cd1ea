//! A2A's gRPC binding, as agui-gateway speaks it towards agents and passes
//! it through for clients. Two services, not wire-compatible with each
//! other: 0.3's `a2a.v1.A2AService` (`v03`) and 1.0's
//! `lf.a2a.v1.A2AService` (`v10`).
//!
//! - `client`: `GrpcAgent`, an agent's service called as the JSON-RPC agent
//!   it stands for (`requests` reads the JSON-RPC call; `json`, `write`
//!   and `dialect` write the answer; `status` reads an error).
//! - `passthrough`: a client's own gRPC call sent on as it came.
//! - `cards`: a card rewritten on the wire with the gateway's addresses.
//!
//! Knows nothing of the gateway: its TLS comes in as a `ClientTls`, its
//! limits and deadlines as arguments.
#![forbid(unsafe_code)]

pub mod cards;
mod client;
pub mod dialect;
pub mod json;
pub mod passthrough;
mod requests;
pub mod status;
pub mod v03;
pub mod v10;
pub mod write;

pub use client::{
    AddressError, BrokenStream, ClientTls, ConnectError, GrpcAgent, JsonRpcAnswer, JsonRpcBody,
    Service,
};
pub use requests::ServiceCall;
