//! What the gateway tells its operators: metrics, traces, the log and the
//! access log. Used from every layer above; depends on none of them.

pub mod access;
pub mod logging;
pub mod metrics;
pub mod telemetry;
