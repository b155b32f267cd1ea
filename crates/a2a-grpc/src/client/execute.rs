//! `GrpcAgent::execute`: a JSON-RPC call made as the call of the agent's
//! service it stands for, and answered as JSON-RPC.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::HeaderMap;
use http::uri::PathAndQuery;
use serde_json::{Value, json};
use tonic_prost::ProstCodec;

use super::answer::{Reply, content_type, error_frame, json_answer, refused, refused_with};
use super::{BrokenStream, GrpcAgent, JsonRpcAnswer, JsonRpcBody, Service, is_cut, not_connected};
use crate::dialect::Dialect;
use crate::requests::{self, CallError, ServiceCall};
use crate::{json, v03, v10, write};

impl GrpcAgent {
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
        let call = match requests::call_of(&body) {
            Ok(call) => call,
            Err(err) => return refused(id, err.code(), &err.to_string()),
        };
        let method = body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.call(call, (id, Dialect::of_method(method)), headers, deadline)
            .await
    }

    /// Makes `call` and answers as JSON-RPC would have, with the call's
    /// `id`, in `dialect`: the typed entry point, for a caller that knows
    /// what it calls (the gateway's own calls), where `execute` reads a
    /// JSON-RPC body first.
    pub async fn call(
        &self,
        call: ServiceCall,
        (id, dialect): (Value, Dialect),
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> JsonRpcAnswer {
        let reply = Reply { id, dialect };
        let id = reply.id.clone();
        match self.answer(call, reply, headers, deadline).await {
            Ok(answer) => answer,
            Err(err) => refused(id, err.code(), &err.to_string()),
        }
    }

    async fn answer(
        &self,
        call: ServiceCall,
        id: Reply,
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> Result<JsonRpcAnswer, CallError> {
        Ok(match (call, self.service) {
            (
                ServiceCall::Send {
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
                ServiceCall::Send {
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
            (ServiceCall::Subscribe { id: task }, Service::V10) => {
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
            (ServiceCall::Subscribe { id: task }, Service::V03) => {
                let message = v03::TaskNameRequest {
                    name: v03::task_name(&task),
                };
                let request = self.request(message, headers, None);
                let path = self.service.path("TaskSubscription");
                let codec = ProstCodec::<v03::TaskNameRequest, v03::StreamResponse>::default();
                self.stream(request, path, codec, id, frame_v03).await
            }
            (
                ServiceCall::Send {
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
                ServiceCall::Send {
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
                ServiceCall::Get {
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
                ServiceCall::Get {
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
            (ServiceCall::Cancel { id: task }, Service::V10) => {
                let message = v10::CancelTaskRequest {
                    tenant: String::new(),
                    id: task,
                    metadata: None,
                };
                let request = self.request(message, headers, deadline);
                let answer = self.unary::<_, v10::Task>(request, "CancelTask").await;
                json_answer(id.task(answer.map(|task| write::task_value(&task))))
            }
            (ServiceCall::Cancel { id: task }, Service::V03) => {
                let message = v03::TaskNameRequest {
                    name: v03::task_name(&task),
                };
                let request = self.request(message, headers, deadline);
                let answer = self.unary::<_, v03::Task>(request, "CancelTask").await;
                json_answer(id.task(answer.map(|task| json::task_v03(&task))))
            }
            (ServiceCall::List { params }, Service::V10) => {
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
            (ServiceCall::List { .. }, Service::V03) => {
                return Err(CallError::Method("tasks/list".to_owned()));
            }
            (ServiceCall::ExtendedCard, _) => {
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
        let opened = opened.await;
        let refused_with = refused_with(&opened);
        let body: futures::stream::BoxStream<'static, Result<Bytes, BrokenStream>> = match opened {
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
                                let cut = BrokenStream(status.message().to_owned());
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
                    refused_with: None,
                };
            }
            Err(status) => {
                futures::stream::once(async move { Ok(error_frame(&id.id, &status)) }).boxed()
            }
        };
        JsonRpcAnswer {
            headers: content_type("text/event-stream"),
            body: JsonRpcBody::Stream(body),
            refused_with,
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
