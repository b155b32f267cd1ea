//! An A2A streaming answer: `text/event-stream` of JSON-RPC responses.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};

/// A response streaming `stream`'s chunks as they come.
pub(crate) fn response<E>(
    stream: impl futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
) -> Response
where
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// One `data:` frame: the JSON-RPC response of request `id` carrying
/// `result`.
pub(crate) fn frame(id: &Value, result: &Value) -> Bytes {
    Bytes::from(format!(
        "data: {}\n\n",
        json!({ "jsonrpc": "2.0", "id": id, "result": result })
    ))
}
