//! A2A's gRPC binding towards agents. The gateway writes every call it
//! makes as JSON-RPC (`rpc`) and reads every answer as JSON-RPC; for an
//! agent that speaks gRPC, `GrpcAgent::execute` stands where the HTTP
//! request would be sent: it reads the JSON-RPC call into the typed request
//! of the agent's service (`requests`), calls it, and answers as the
//! agent would have over JSON-RPC (a stream of `data:` frames, or one JSON
//! body; the typed answers written as 1.0's JSON by `json`, errors as the
//! JSON-RPC errors `status` reads them as). So conversion, resume, healing,
//! cancel, listing and the journal work unchanged on a gRPC agent.
//!
//! Two services: 0.3's `a2a.v1.A2AService` (`v03`) and 1.0's
//! `lf.a2a.v1.A2AService` (`v10`), not wire-compatible with each other.

pub mod cards;
mod connect;
pub mod dialect;
pub mod json;
pub mod pass;
pub mod requests;
pub mod status;
pub mod v03;
pub mod v10;
pub mod write;

use std::sync::Arc;
use std::time::Duration;

use axum::http::uri::PathAndQuery;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tonic::client::Grpc;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use tonic_prost::ProstCodec;
use url::Url;

use self::dialect::Dialect;
use self::requests::{Call, CallError};
use self::status::classify;
use crate::upstream::tls::Reloadable;

/// Which A2A service an agent's gRPC interface is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// `a2a.v1.A2AService`.
    V03,
    /// `lf.a2a.v1.A2AService`.
    V10,
}

impl Service {
    fn path(self, method: &'static str) -> PathAndQuery {
        let service = match self {
            Service::V03 => v03::SERVICE,
            Service::V10 => v10::SERVICE,
        };
        // Both parts are this crate's constants: always a valid path.
        PathAndQuery::try_from(format!("/{service}/{method}"))
            .unwrap_or_else(|_| PathAndQuery::from_static("/"))
    }

    /// The `a2a-version` metadata a client of this service sends.
    fn version(self) -> &'static str {
        match self {
            Service::V03 => "0.3",
            Service::V10 => "1.0",
        }
    }
}

/// An agent's gRPC address that is not one.
#[derive(Debug, thiserror::Error)]
#[error("the agent's gRPC address {0:?} is not one")]
pub struct GrpcError(String);

/// An agent reached over gRPC.
#[derive(Clone)]
pub struct GrpcAgent {
    channel: Channel,
    service: Service,
    /// The largest message read from the agent (`max_event_bytes`).
    max_message_bytes: usize,
}

/// The agent's answer, as its JSON-RPC answer would have been.
pub struct JsonRpcAnswer {
    pub headers: HeaderMap,
    pub body: JsonRpcBody,
}

pub enum JsonRpcBody {
    /// `data:` frames, one per stream item; the agent's error status ends
    /// it as a frame, a broken connection as an error (what an HTTP body
    /// cut short is: the relay heals it by subscribing again).
    Stream(futures::stream::BoxStream<'static, Result<Bytes, Cut>>),
    Json(Bytes),
    /// The call was not made: no connection (refused, a TLS handshake
    /// that failed, not in time). The gateway's error, not the agent's.
    Unreachable(tonic::Status),
}

/// The connection to the agent broke mid-stream.
#[derive(Debug, thiserror::Error)]
#[error("the agent's gRPC stream broke: {0}")]
pub struct Cut(String);

/// The channel could not take the call (no connection): a status that
/// carries its cause, as the transport's own do.
fn not_connected(err: tonic::transport::Error) -> tonic::Status {
    tonic::Status::from_error(Box::new(err))
}

/// A status the transport made (a reset, a closed connection), not one
/// the agent sent: those carry their cause.
fn is_cut(status: &tonic::Status) -> bool {
    std::error::Error::source(status).is_some()
}

/// Bytes an agent may send on one stream ahead of the gateway's reading:
/// at 100-byte messages, 16 KiB holds 160 of them, and a stream of tokens
/// over a 50 ms round trip still gets 320 KB/s.
const STREAM_WINDOW: u32 = 16 * 1024;

/// Bytes ahead on the whole connection: h2's budget for small frames held
/// is half of it (8 MiB), what about 150 streams of full windows of
/// 60-byte messages cost.
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// The headers that are HTTP's, not the call's: never gRPC metadata.
const NOT_METADATA: [HeaderName; 8] = [
    header::HOST,
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::ACCEPT,
    header::ACCEPT_ENCODING,
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
];

impl GrpcAgent {
    /// A channel to `url` (`host:port`, or with an `http`, `https`,
    /// `grpc` or `grpcs` scheme), connected on first use; over TLS
    /// (`https`, `grpcs`) with the agent's TLS settings as `tls` holds them.
    pub fn new(
        url: &Url,
        service: Service,
        (connect_timeout, max_message_bytes): (Duration, usize),
        tls: Arc<Reloadable>,
    ) -> Result<GrpcAgent, GrpcError> {
        let scheme = match url.scheme() {
            "http" | "grpc" => "http",
            "https" | "grpcs" => "https",
            other => return Err(GrpcError(other.to_owned())),
        };
        let host = url.host_str().ok_or_else(|| GrpcError(url.to_string()))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| GrpcError(url.to_string()))?;
        let endpoint = Endpoint::from_shared(format!("{scheme}://{host}:{port}"))
            .map_err(|_| GrpcError(url.to_string()))?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20))
            // h2 ends a whole connection (GOAWAY ENHANCE_YOUR_CALM) once the
            // small DATA frames it holds unread cost more than half its
            // connection window: an agent streaming tokens as one small
            // message each, to clients slower than it (or a gateway busy
            // with others), did that to every run on the connection. Small
            // stream windows and a large connection window keep what any
            // one stream can hold back well under that budget (measured in
            // BENCHMARKS.md: 50 streams of 2,000 back-to-back messages).
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW);
        let channel = match scheme {
            "https" => {
                endpoint.connect_with_connector_lazy(connect::connector(tls, connect_timeout))
            }
            _ => endpoint.connect_lazy(),
        };
        Ok(GrpcAgent {
            channel,
            service,
            max_message_bytes,
        })
    }

    pub fn service(&self) -> Service {
        self.service
    }

    fn grpc(&self) -> Grpc<Channel> {
        Grpc::new(self.channel.clone()).max_decoding_message_size(self.max_message_bytes)
    }

    /// The call's metadata: the request's headers that are the call's
    /// (credentials, extensions, trace context, configured headers), and
    /// the service's version.
    fn metadata(&self, headers: &HeaderMap) -> MetadataMap {
        let mut metadata = MetadataMap::new();
        for (name, value) in headers {
            if NOT_METADATA.contains(name) || name.as_str().starts_with("grpc-") {
                continue;
            }
            let Ok(key) = MetadataKey::from_bytes(name.as_str().as_bytes()) else {
                continue;
            };
            let Ok(value) = MetadataValue::try_from(value.as_bytes()) else {
                continue;
            };
            metadata.append(key, value);
        }
        metadata.insert(
            "a2a-version",
            MetadataValue::from_static(self.service.version()),
        );
        // 0.3 agents read extensions under the older name.
        if self.service == Service::V03
            && let Some(extensions) = headers.get("a2a-extensions")
            && let Ok(value) = MetadataValue::try_from(extensions.as_bytes())
        {
            metadata.insert("x-a2a-extensions", value);
        }
        metadata
    }

    fn request<T>(
        &self,
        message: T,
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        *request.metadata_mut() = self.metadata(headers);
        if let Some(deadline) = deadline {
            request.set_timeout(deadline);
        }
        request
    }

    /// Answers a JSON-RPC `body` sent with `headers` as the agent's gRPC
    /// service answers it, always as JSON-RPC: a body that is no call of
    /// the service gets JSON-RPC's error for it. `deadline` bounds a unary
    /// call (a stream is bounded by the relay's idle timer).
    pub async fn execute(
        &self,
        body: &[u8],
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> JsonRpcAnswer {
        let Ok(body) = serde_json::from_slice::<Value>(body) else {
            return refused(Value::Null, -32700, "the request body is not JSON");
        };
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        match self.answer(&body, id.clone(), headers, deadline).await {
            Ok(answer) => answer,
            Err(err) => refused(id, err.code(), &err.to_string()),
        }
    }

    async fn answer(
        &self,
        body: &Value,
        id: Value,
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> Result<JsonRpcAnswer, CallError> {
        let call = requests::call_of(body)?;
        let method = body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = Reply {
            id,
            dialect: Dialect::of_method(method),
        };
        Ok(match (call, self.service) {
            (
                Call::Send {
                    streaming: true,
                    params,
                },
                Service::V10,
            ) => {
                let request = self.request(requests::send_v10(&params)?, headers, None);
                let path = self.service.path("SendStreamingMessage");
                let codec = ProstCodec::<v10::SendMessageRequest, v10::StreamResponse>::default();
                let answer = self.stream(request, path, codec, id, frame_v10);
                answer.await
            }
            (
                Call::Send {
                    streaming: true,
                    params,
                },
                Service::V03,
            ) => {
                let request = self.request(requests::send_v03(&params)?, headers, None);
                let path = self.service.path("SendStreamingMessage");
                let codec = ProstCodec::<v03::SendMessageRequest, v03::StreamResponse>::default();
                let answer = self.stream(request, path, codec, id, frame_v03);
                answer.await
            }
            (Call::Subscribe { id: task }, Service::V10) => {
                let message = v10::SubscribeToTaskRequest {
                    tenant: String::new(),
                    id: task,
                };
                let request = self.request(message, headers, None);
                let path = self.service.path("SubscribeToTask");
                let codec =
                    ProstCodec::<v10::SubscribeToTaskRequest, v10::StreamResponse>::default();
                self.stream(request, path, codec, id, frame_v10).await
            }
            (Call::Subscribe { id: task }, Service::V03) => {
                let message = v03::TaskNameRequest {
                    name: v03::task_name(&task),
                };
                let request = self.request(message, headers, None);
                let path = self.service.path("TaskSubscription");
                let codec = ProstCodec::<v03::TaskNameRequest, v03::StreamResponse>::default();
                self.stream(request, path, codec, id, frame_v03).await
            }
            (
                Call::Send {
                    streaming: false,
                    params,
                },
                Service::V10,
            ) => {
                let request = self.request(requests::send_v10(&params)?, headers, deadline);
                let answer = self
                    .unary::<_, v10::StreamResponse>(request, "SendMessage")
                    .await
                    .map(|item| id.send_result(write::stream_value(&item)));
                json_answer((id, answer))
            }
            (
                Call::Send {
                    streaming: false,
                    params,
                },
                Service::V03,
            ) => {
                let request = self.request(requests::send_v03(&params)?, headers, deadline);
                let answer = self
                    .unary::<_, v03::StreamResponse>(request, "SendMessage")
                    .await
                    .map(|item| id.send_result(json::stream_v03(&item)));
                json_answer((id, answer))
            }
            (
                Call::Get {
                    id: task,
                    history_length,
                },
                Service::V10,
            ) => {
                let message = v10::GetTaskRequest {
                    tenant: String::new(),
                    id: task,
                    history_length,
                };
                let request = self.request(message, headers, deadline);
                let answer = self.unary::<_, v10::Task>(request, "GetTask").await;
                json_answer(id.task(answer.map(|task| write::task_value(&task))))
            }
            (
                Call::Get {
                    id: task,
                    history_length,
                },
                Service::V03,
            ) => {
                let message = v03::GetTaskRequest {
                    name: v03::task_name(&task),
                    history_length: history_length.unwrap_or_default(),
                };
                let request = self.request(message, headers, deadline);
                let answer = self.unary::<_, v03::Task>(request, "GetTask").await;
                json_answer(id.task(answer.map(|task| json::task_v03(&task))))
            }
            (Call::Cancel { id: task }, Service::V10) => {
                let message = v10::CancelTaskRequest {
                    tenant: String::new(),
                    id: task,
                    metadata: None,
                };
                let request = self.request(message, headers, deadline);
                let answer = self.unary::<_, v10::Task>(request, "CancelTask").await;
                json_answer(id.task(answer.map(|task| write::task_value(&task))))
            }
            (Call::Cancel { id: task }, Service::V03) => {
                let message = v03::TaskNameRequest {
                    name: v03::task_name(&task),
                };
                let request = self.request(message, headers, deadline);
                let answer = self.unary::<_, v03::Task>(request, "CancelTask").await;
                json_answer(id.task(answer.map(|task| json::task_v03(&task))))
            }
            (Call::List { params }, Service::V10) => {
                let request = self.request(requests::list_v10(&params), headers, deadline);
                let answer = self
                    .unary::<_, v10::ListTasksResponse>(request, "ListTasks")
                    .await;
                json_answer((
                    id,
                    answer.map(|list| {
                        json!({
                            "tasks": list.tasks.iter().map(write::task_value).collect::<Vec<_>>(),
                            "nextPageToken": list.next_page_token,
                            "pageSize": list.page_size,
                            "totalSize": list.total_size,
                        })
                    }),
                ))
            }
            (Call::List { .. }, Service::V03) => {
                return Err(CallError::Method("tasks/list".to_owned()));
            }
            (Call::ExtendedCard, _) => {
                let card = self.card(headers, deadline).await;
                json_answer((id, card))
            }
        })
    }

    /// The agent's card over gRPC, as the JSON card of its version:
    /// 1.0's `GetExtendedAgentCard`, 0.3's `GetAgentCard`.
    pub async fn card(
        &self,
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> Result<Value, tonic::Status> {
        match self.service {
            Service::V10 => {
                let request = self.request(
                    v10::GetExtendedAgentCardRequest::default(),
                    headers,
                    deadline,
                );
                let card = self
                    .unary::<_, v10::AgentCard>(request, "GetExtendedAgentCard")
                    .await?;
                Ok(json::card_v10(&card))
            }
            Service::V03 => {
                let request = self.request(v03::GetAgentCardRequest {}, headers, deadline);
                let card = self
                    .unary::<_, v03::AgentCard>(request, "GetAgentCard")
                    .await?;
                Ok(json::card_v03(&card))
            }
        }
    }

    async fn unary<Q, A>(
        &self,
        request: tonic::Request<Q>,
        method: &'static str,
    ) -> Result<A, tonic::Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.grpc();
        grpc.ready().await.map_err(not_connected)?;
        let response = grpc
            .unary(
                request,
                self.service.path(method),
                ProstCodec::<Q, A>::default(),
            )
            .await?;
        Ok(response.into_inner())
    }

    async fn stream<Q, A>(
        &self,
        request: tonic::Request<Q>,
        path: PathAndQuery,
        codec: ProstCodec<Q, A>,
        id: Reply,
        to_frame: fn(&A, &Reply) -> Option<Bytes>,
    ) -> JsonRpcAnswer
    where
        Q: prost::Message + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.grpc();
        let opened = async {
            grpc.ready().await.map_err(not_connected)?;
            grpc.server_streaming(request, path, codec).await
        };
        let body: futures::stream::BoxStream<'static, Result<Bytes, Cut>> = match opened.await {
            Ok(response) => {
                let items = response.into_inner();
                let frames = futures::stream::unfold(
                    (items, id, false),
                    move |(mut items, id, done)| async move {
                        if done {
                            return None;
                        }
                        match items.message().await {
                            Ok(Some(item)) => {
                                // An empty item: a keep-alive comment.
                                let frame = to_frame(&item, &id)
                                    .unwrap_or_else(|| Bytes::from_static(b": empty item\n\n"));
                                Some((Ok(frame), (items, id, false)))
                            }
                            Ok(None) => None,
                            Err(status) if is_cut(&status) => {
                                let cut = Cut(status.message().to_owned());
                                Some((Err(cut), (items, id, true)))
                            }
                            Err(status) => {
                                Some((Ok(error_frame(&id.id, &status)), (items, id, true)))
                            }
                        }
                    },
                );
                frames.boxed()
            }
            Err(status) if is_cut(&status) => {
                return JsonRpcAnswer {
                    headers: HeaderMap::new(),
                    body: JsonRpcBody::Unreachable(status),
                };
            }
            Err(status) => {
                futures::stream::once(async move { Ok(error_frame(&id.id, &status)) }).boxed()
            }
        };
        JsonRpcAnswer {
            headers: content_type("text/event-stream"),
            body: JsonRpcBody::Stream(body),
        }
    }
}

/// A 1.0 stream item as the caller's frame: written straight to bytes for
/// a 1.0 caller (a run's every event), through 0.3's shapes for a 0.3 one.
fn frame_v10(item: &v10::StreamResponse, reply: &Reply) -> Option<Bytes> {
    match reply.dialect {
        Dialect::V10 => write::frame(&reply.id, item).map(Bytes::from),
        Dialect::V03 => write::stream_value(item).map(|wrapped| reply.frame(wrapped)),
    }
}

fn frame_v03(item: &v03::StreamResponse, reply: &Reply) -> Option<Bytes> {
    json::stream_v03(item).map(|wrapped| reply.frame(wrapped))
}

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

fn content_type(value: &'static str) -> HeaderMap {
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

fn error_frame(id: &Value, status: &tonic::Status) -> Bytes {
    let frame = json!({ "jsonrpc": "2.0", "id": id, "error": error_object(status) });
    Bytes::from(format!("data: {frame}\n\n"))
}

/// A JSON-RPC error answer made here, before any call.
fn refused(id: Value, code: i64, message: &str) -> JsonRpcAnswer {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    JsonRpcAnswer {
        headers: content_type("application/json"),
        body: JsonRpcBody::Json(Bytes::from(body.to_string())),
    }
}

/// Who an answer is for: the call's id and the dialect it asked in.
#[derive(Clone)]
struct Reply {
    id: Value,
    dialect: Dialect,
}

impl Reply {
    /// A stream item (1.0's wrapped JSON) as a frame of this dialect.
    fn frame(&self, wrapped: Value) -> Bytes {
        let result = match self.dialect {
            Dialect::V10 => wrapped,
            Dialect::V03 => dialect::stream_item_v03(&wrapped),
        };
        result_frame(&self.id, result)
    }

    /// `SendMessage`'s answer: a task or a message, unwrapped.
    fn send_result(&self, wrapped: Option<Value>) -> Value {
        match (wrapped, self.dialect) {
            (None, _) => Value::Null,
            (Some(wrapped), Dialect::V10) => unwrap_send(wrapped),
            (Some(wrapped), Dialect::V03) => dialect::stream_item_v03(&wrapped),
        }
    }

    fn task(self, answer: Result<Value, tonic::Status>) -> (Reply, Result<Value, tonic::Status>) {
        let answer = match self.dialect {
            Dialect::V10 => answer,
            Dialect::V03 => answer.map(|task| dialect::task_v03(&task)),
        };
        (self, answer)
    }
}

fn json_answer((reply, answer): (Reply, Result<Value, tonic::Status>)) -> JsonRpcAnswer {
    let id = reply.id;
    if let Err(status) = &answer
        && is_cut(status)
    {
        return JsonRpcAnswer {
            headers: HeaderMap::new(),
            body: JsonRpcBody::Unreachable(status.clone()),
        };
    }
    let body = match answer {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(status) => json!({ "jsonrpc": "2.0", "id": id, "error": error_object(&status) }),
    };
    JsonRpcAnswer {
        headers: content_type("application/json"),
        body: JsonRpcBody::Json(Bytes::from(body.to_string())),
    }
}

impl JsonRpcAnswer {
    /// The answer as reqwest's, for the callers that read one. A call
    /// not made is the gateway's 502, as for an HTTP agent not reached.
    pub fn into_reqwest(self) -> reqwest::Response {
        let mut status = axum::http::StatusCode::OK;
        let mut headers = self.headers;
        let body = match self.body {
            JsonRpcBody::Json(bytes) => reqwest::Body::from(bytes),
            JsonRpcBody::Stream(frames) => reqwest::Body::wrap_stream(frames),
            JsonRpcBody::Unreachable(cause) => {
                tracing::debug!("gRPC call not made: {cause}");
                status = axum::http::StatusCode::BAD_GATEWAY;
                headers = content_type("application/json");
                let code = a2a_agui::ErrorCode::UpstreamUnreachable;
                let body = json!({ "error": {
                    "code": code.as_str(),
                    "message": "the upstream agent could not be connected to",
                    "side": code.side().as_str(),
                } });
                reqwest::Body::from(body.to_string())
            }
        };
        let mut response = axum::http::Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        reqwest::Response::from(response)
    }

    /// The body as a stream of chunks, for the relay.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, Cut>> + Send + 'static {
        match self.body {
            JsonRpcBody::Json(bytes) => futures::stream::once(async move { Ok(bytes) }).boxed(),
            JsonRpcBody::Stream(frames) => frames,
            JsonRpcBody::Unreachable(cause) => {
                futures::stream::once(async move { Err(Cut(cause.message().to_owned())) }).boxed()
            }
        }
    }
}
