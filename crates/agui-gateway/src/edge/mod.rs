//! The edge's parts that know nothing of agents: the listener (connection
//! caps, timeouts), authentication, rate limits, CORS, and the JSON error a
//! client gets before any stream. `http::gate` puts them in front of the
//! routes.

pub mod auth;
pub mod cors;
pub mod error;
pub mod listener;
pub mod ratelimit;
