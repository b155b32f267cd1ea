//! The edge's parts that know nothing of agents: the listener (connection
//! caps, timeouts, TLS and HTTP/2), authentication, rate limits, CORS, and the JSON error a
//! client gets before any stream. `http::gate` puts them in front of the
//! routes.

pub mod auth;
pub mod bodies;
pub mod cors;
mod drain;
pub mod error;
mod h2;
pub mod listener;
pub mod ratelimit;
pub mod tls;
