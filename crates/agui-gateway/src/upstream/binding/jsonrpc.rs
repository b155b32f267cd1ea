//! The JSON-RPC binding: every call a `POST` of its JSON-RPC body to the
//! interface's URL (`rpc` writes the bodies in 0.3's or 1.0's dialect).

use axum::http::Method;
use bytes::Bytes;

use super::http::HttpCall;
use crate::config::{A2aVersion, Mode};
use crate::upstream::route::Route;
use crate::upstream::rpc::Call;
use crate::upstream::rpc::{TaskCall, list_tasks_request, send_request, task_request};

pub fn request(route: &Route, call: &Call<'_>, rpc_id: &str) -> HttpCall {
    let version = route.version();
    let (body, v10, streams) = match call {
        Call::Send { message, .. } => {
            let (body, v10) = send_request(version, message, rpc_id, route.mode);
            (body, v10, route.mode == Mode::Stream)
        }
        Call::Task(task_call, task) => {
            let (body, v10) = task_request(version, *task_call, task, rpc_id);
            (body, v10, *task_call == TaskCall::Subscribe)
        }
        // Only 1.0 lists tasks.
        Call::List {
            context,
            page_token,
        } => (
            list_tasks_request(*context, page_token, rpc_id),
            true,
            false,
        ),
    };
    HttpCall {
        method: Method::POST,
        url: route.url().clone(),
        body: Some(Bytes::from(body.to_string())),
        streams,
        v10: v10 || version == A2aVersion::V10,
    }
}
