//! What clients send: a `RunAgentInput` for `/agui` and every seed-body
//! shape a negotiated call may carry. Any bytes give a message to send or
//! a client error, never a panic; an accepted input sends at least one
//! part, or cancels a named task.

use agui_gateway::agui::input::Upstream;
use agui_gateway::agui::read_run_input;
use agui_gateway::http::error::ApiError;
use agui_gateway::http::negotiate::{Negotiated, negotiate};
use axum::http::Method;

pub fn check(data: &[u8]) {
    match read_run_input(data) {
        Ok(run) => match run.upstream {
            Upstream::Send(message) => {
                assert!(!message.parts.is_empty(), "an empty message was accepted");
                assert!(message.context_id.is_some_and(|c| !c.is_empty()));
            }
            Upstream::Cancel { task, then } => {
                assert!(!task.is_empty());
                assert!(then.is_none_or(|m| !m.parts.is_empty()));
            }
        },
        Err(err) => {
            let answer = ApiError::from(err);
            assert!(answer.status.is_client_error(), "{answer:?}");
        }
    }
    for (method, path) in [
        (Method::POST, "/"),
        (Method::POST, "/v1/message:stream"),
        (Method::GET, "/tasks/t1:subscribe"),
    ] {
        match negotiate(&method, path, data) {
            Ok(Negotiated::Build(message)) => assert!(!message.parts.is_empty()),
            Ok(_) => {}
            Err(err) => assert!(err.status.is_client_error(), "{err:?}"),
        }
    }
}
