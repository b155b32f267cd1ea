//! The HTTP+JSON binding, as 1.0 defines it: each call a route below the
//! interface's URL (`/message:stream`, `/tasks/{id}`, ...), a send's body
//! the same `SendMessageRequest` JSON-RPC carries as params, a stream's
//! events bare `StreamResponse`s (the converter reads them by shape).

use axum::http::Method;
use bytes::Bytes;
use serde_json::Value;
use url::Url;

use super::http::HttpCall;
use crate::config::{A2aVersion, Mode};
use crate::upstream::route::Route;
use crate::upstream::rpc::Call;
use crate::upstream::rpc::{TaskCall, list_params, send_params};

pub fn request(route: &Route, call: &Call<'_>) -> HttpCall {
    let base = route.url();
    let (method, url, body, streams) = match call {
        Call::Send { message, .. } => {
            let params = send_params(A2aVersion::V10, message, route.mode);
            let (path, streams) = match route.mode {
                Mode::Stream => ("message:stream", true),
                Mode::Poll => ("message:send", false),
            };
            let body = Bytes::from(Value::Object(params).to_string());
            (Method::POST, below(base, &[path]), Some(body), streams)
        }
        Call::Task(TaskCall::Get, task) => {
            (Method::GET, below(base, &["tasks", task]), None, false)
        }
        Call::Task(TaskCall::Cancel, task) => {
            let url = below(base, &["tasks", &format!("{task}:cancel")]);
            (Method::POST, url, Some(Bytes::from_static(b"{}")), false)
        }
        // The proto's verb; the SDKs take `POST` as well.
        Call::Task(TaskCall::Subscribe, task) => {
            let url = below(base, &["tasks", &format!("{task}:subscribe")]);
            (Method::GET, url, None, true)
        }
        Call::List {
            context,
            page_token,
        } => {
            let mut url = below(base, &["tasks"]);
            {
                let mut query = url.query_pairs_mut();
                for (key, value) in list_params(*context, page_token) {
                    match value {
                        Value::String(text) => query.append_pair(&key, &text),
                        other => query.append_pair(&key, &other.to_string()),
                    };
                }
            }
            (Method::GET, url, None, false)
        }
    };
    HttpCall {
        method,
        url,
        body,
        streams,
        v10: true,
    }
}

/// `base` with `segments` appended, each percent-encoded as one segment
/// (a task id is the agent's word: it names no other path).
fn below(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_stay_one_segment() {
        let base = Url::parse("http://a/rest").unwrap();
        assert_eq!(
            below(&base, &["tasks", "../../admin?x=1"]).as_str(),
            "http://a/rest/tasks/..%2F..%2Fadmin%3Fx=1"
        );
        let slash = Url::parse("http://a/rest/").unwrap();
        assert_eq!(
            below(&slash, &["message:send"]).as_str(),
            "http://a/rest/message:send"
        );
    }
}
