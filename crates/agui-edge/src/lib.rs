//! The gateway's edge, the parts that know nothing of agents: the
//! listener (connection caps, timeouts, TLS and HTTP/2, request body
//! budgets, the drain), authentication, rate limits, CORS, and the JSON
//! error body every refusal carries. The gateway's `http::gate` puts them
//! in front of its routes; its configuration reads the settings here.
#![forbid(unsafe_code)]

pub mod auth;
pub mod bodies;
pub mod cors;
mod drain;
mod h2;
pub mod listener;
mod preface;
pub mod ratelimit;
pub mod refusal;
mod throttle;
pub mod tls;
