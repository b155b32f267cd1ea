//! The gateway's modules, as a library for the binary (`main.rs`), the
//! fuzz targets (`fuzz/`) and tests. Not a stable API: the binary and its
//! HTTP surface are the product.
#![forbid(unsafe_code)]

pub mod access;
pub mod agui;
pub mod auth;
pub mod card;
pub mod config;
pub mod cors;
pub mod demo;
pub mod edge;
pub mod error;
pub mod forwarding;
pub mod inspect;
pub mod journal;
pub mod lean;
pub mod logging;
pub mod metrics;
pub mod negotiate;
pub mod outbound;
pub mod random;
pub mod ratelimit;
pub mod relay;
pub mod resume;
pub mod routes;
pub mod server;
pub mod state;
pub mod target;
pub mod telemetry;
pub mod throttle;
pub mod upstream;
