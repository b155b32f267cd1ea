//! The answer a gRPC call makes, as its JSON-RPC answer would have been:
//! `data:` frames or one JSON body with the call's id, in the dialect the
//! caller asked in; a status as the JSON-RPC error it stands for.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, header};
use serde_json::{Value, json};

use super::is_cut;
use crate::dialect::{self, Dialect};
use crate::status::classify;

/// The agent's answer, as its JSON-RPC answer would have been.
pub struct JsonRpcAnswer {
    pub headers: HeaderMap,
    pub body: JsonRpcBody,
    /// The status the agent refused the call with, when it did: what
    /// HTTP's status is to a caller that renews a token on
    /// `UNAUTHENTICATED`, or tries again later on `UNAVAILABLE`.
    pub refused_with: Option<tonic::Code>,
}

/// What the answer's body is.
pub enum JsonRpcBody {
    /// `data:` frames, one per stream item; the agent's error status ends
    /// it as a frame, a broken connection as an error (what an HTTP body
    /// cut short is: the relay heals it by subscribing again).
    Stream(futures::stream::BoxStream<'static, Result<Bytes, BrokenStream>>),
    Json(Bytes),
    /// The call was not made: no connection (refused, a TLS handshake
    /// that failed, not in time). The gateway's error, not the agent's.
    Unreachable(tonic::Status),
}

/// The connection to the agent broke mid-stream: what an HTTP body cut
/// short is to its reader.
#[derive(Debug, thiserror::Error)]
#[error("the agent's gRPC stream broke: {0}")]
pub struct BrokenStream(pub(super) String);

/// `SendMessage`'s answer is a task or a message, unwrapped as JSON-RPC's
/// `message/send` result is.
fn unwrap_send(wrapped: Value) -> Value {
    match wrapped {
        Value::Object(mut object) => object
            .remove("task")
            .or_else(|| object.remove("message"))
            .unwrap_or(Value::Object(object)),
        other => other,
    }
}

pub(super) fn content_type(value: &'static str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
    headers
}

fn error_object(status: &tonic::Status) -> Value {
    let (error, message) = classify(status);
    json!({ "code": error.json_rpc_code(), "message": message,
            "data": { "grpcStatus": status.code() as i32 } })
}

fn result_frame(id: &Value, result: Value) -> Bytes {
    let frame = json!({ "jsonrpc": "2.0", "id": id, "result": result });
    Bytes::from(format!("data: {frame}\n\n"))
}

pub(super) fn error_frame(id: &Value, status: &tonic::Status) -> Bytes {
    let frame = json!({ "jsonrpc": "2.0", "id": id, "error": error_object(status) });
    Bytes::from(format!("data: {frame}\n\n"))
}

/// A JSON-RPC error answer made here, before any call.
pub(super) fn refused(id: Value, code: i64, message: &str) -> JsonRpcAnswer {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    JsonRpcAnswer {
        headers: content_type("application/json"),
        body: JsonRpcBody::Json(Bytes::from(body.to_string())),
        refused_with: None,
    }
}

/// Who an answer is for: the call's id and the dialect it asked in.
#[derive(Clone)]
pub(super) struct Reply {
    pub(super) id: Value,
    pub(super) dialect: Dialect,
}

impl Reply {
    /// A stream item (1.0's wrapped JSON) as a frame of this dialect.
    pub(super) fn frame(&self, wrapped: Value) -> Bytes {
        let result = match self.dialect {
            Dialect::V10 => wrapped,
            Dialect::V03 => dialect::stream_item_v03(&wrapped),
        };
        result_frame(&self.id, result)
    }

    /// `SendMessage`'s answer: a task or a message, unwrapped.
    pub(super) fn send_result(&self, wrapped: Option<Value>) -> Value {
        match (wrapped, self.dialect) {
            (None, _) => Value::Null,
            (Some(wrapped), Dialect::V10) => unwrap_send(wrapped),
            (Some(wrapped), Dialect::V03) => dialect::stream_item_v03(&wrapped),
        }
    }

    pub(super) fn task(
        self,
        answer: Result<Value, tonic::Status>,
    ) -> (Reply, Result<Value, tonic::Status>) {
        let answer = match self.dialect {
            Dialect::V10 => answer,
            Dialect::V03 => answer.map(|task| dialect::task_v03(&task)),
        };
        (self, answer)
    }
}

pub(super) fn json_answer((reply, answer): (Reply, Result<Value, tonic::Status>)) -> JsonRpcAnswer {
    let id = reply.id;
    if let Err(status) = &answer
        && is_cut(status)
    {
        return JsonRpcAnswer {
            headers: HeaderMap::new(),
            body: JsonRpcBody::Unreachable(status.clone()),
            refused_with: None,
        };
    }
    let refused_with = refused_with(&answer);
    let body = match answer {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(status) => json!({ "jsonrpc": "2.0", "id": id, "error": error_object(&status) }),
    };
    JsonRpcAnswer {
        headers: content_type("application/json"),
        body: JsonRpcBody::Json(Bytes::from(body.to_string())),
        refused_with,
    }
}

pub(super) fn refused_with<T>(answer: &Result<T, tonic::Status>) -> Option<tonic::Code> {
    answer.as_ref().err().map(tonic::Status::code)
}

impl JsonRpcAnswer {
    /// The body as a stream of chunks, for the relay.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, BrokenStream>> + Send + 'static {
        match self.body {
            JsonRpcBody::Json(bytes) => futures::stream::once(async move { Ok(bytes) }).boxed(),
            JsonRpcBody::Stream(frames) => frames,
            JsonRpcBody::Unreachable(cause) => {
                futures::stream::once(async move { Err(BrokenStream(cause.message().to_owned())) })
                    .boxed()
            }
        }
    }
}
