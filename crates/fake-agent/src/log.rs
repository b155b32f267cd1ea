//! What the fault-injecting agent saw: the tests read it to tell what
//! reached the agent (methods, headers, the last body) and when the agent
//! sent each paced event and saw its client leave.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::HeaderMap;
use serde_json::Value;

#[derive(Debug, Default)]
pub struct Log {
    /// When each `drip` event was sent.
    pub sent: Vec<Instant>,
    /// When a streaming response was dropped (the connection closed).
    pub closed: Option<Instant>,
    /// JSON-RPC methods received, and when.
    pub methods: Vec<String>,
    pub received_at: Vec<Instant>,
    /// Headers of the last request.
    pub headers: Vec<(String, String)>,
    /// Body of the last request.
    pub body: Value,
}

impl Log {
    pub(crate) fn received(&mut self, request: &Value, headers: &HeaderMap) {
        self.methods
            .push(request["method"].as_str().unwrap_or("").to_owned());
        self.received_at.push(Instant::now());
        self.body = request.clone();
        self.headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
    }
}

/// Notes when the response stream it travels with is dropped, i.e. the
/// connection closed.
pub(crate) struct DropFlag(pub(crate) Arc<Mutex<Log>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if let Ok(mut log) = self.0.lock() {
            log.closed = Some(Instant::now());
        }
    }
}
