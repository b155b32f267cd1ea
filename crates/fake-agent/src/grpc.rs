//! The fake agent over A2A 1.0's gRPC binding (`lf.a2a.v1.A2AService`),
//! HTTP/2 by prior knowledge: `SendStreamingMessage` streams the plan as
//! typed messages (a task, its chunks as artifact updates, a completed
//! status), `GetExtendedAgentCard` answers a card; anything else is
//! `UNIMPLEMENTED`. The messages are the ones the gateway reads
//! (`a2a_grpc`'s prost types): a load run measures the gateway, not a
//! second schema.

use std::convert::Infallible;
use std::sync::atomic::Ordering;

use a2a_grpc::v10;
use axum::body::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message as _;
use v10::stream_response::Payload;

use crate::load::{Pacer, paced, plan};
use crate::marker::{marker, now_micros};

type Answer = Response<BoxBody<Bytes, Infallible>>;

/// Accepts HTTP/2 connections on `listener` for as long as the process runs.
pub(crate) async fn serve(listener: tokio::net::TcpListener, fake: Pacer) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let fake = fake.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let fake = fake.clone();
                async move { Ok::<_, Infallible>(answer(fake, request).await) }
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .max_concurrent_streams(10_000)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn framed(message: &impl prost::Message) -> Bytes {
    let mut out = Vec::with_capacity(message.encoded_len() + 5);
    out.push(0);
    out.extend_from_slice(
        &u32::try_from(message.encoded_len())
            .unwrap_or(0)
            .to_be_bytes(),
    );
    message.encode_raw(&mut out);
    Bytes::from(out)
}

fn ok_trailers() -> hyper::HeaderMap {
    let mut trailers = hyper::HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers
}

fn grpc_response(body: BoxBody<Bytes, Infallible>) -> Answer {
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    response
}

async fn answer(fake: Pacer, request: Request<Incoming>) -> Answer {
    let path = request.uri().path().to_owned();
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    match path.as_str() {
        "/lf.a2a.v1.A2AService/SendStreamingMessage" => stream(fake, &body),
        "/lf.a2a.v1.A2AService/GetExtendedAgentCard" => {
            let card = v10::AgentCard {
                name: "fake upstream (gRPC)".to_owned(),
                description: "deterministic load-test agent".to_owned(),
                version: "1".to_owned(),
                capabilities: Some(v10::AgentCapabilities {
                    streaming: Some(true),
                    ..v10::AgentCapabilities::default()
                }),
                ..v10::AgentCard::default()
            };
            let frames = [
                Ok(Frame::data(framed(&card))),
                Ok(Frame::trailers(ok_trailers())),
            ];
            grpc_response(BodyExt::boxed(StreamBody::new(futures::stream::iter(
                frames,
            ))))
        }
        _ => {
            let mut response = grpc_response(BodyExt::boxed(Full::new(Bytes::new())));
            response
                .headers_mut()
                .insert("grpc-status", HeaderValue::from_static("12"));
            response
        }
    }
}

fn stream(fake: Pacer, body: &[u8]) -> Answer {
    let request =
        v10::SendMessageRequest::decode(body.get(5..).unwrap_or_default()).unwrap_or_default();
    let text: Vec<String> = request
        .message
        .map(|m| m.parts)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| match p.content {
            Some(v10::part::Content::Text(text)) => Some(text),
            _ => None,
        })
        .collect();
    let plan = plan(&fake.defaults, &text.join(" "));
    let n = fake.tasks.fetch_add(1, Ordering::Relaxed);
    let (task, context) = (format!("task-{n}"), format!("ctx-{n}"));
    let filler = "x".repeat(plan.bytes);
    let status = |state: v10::TaskState| {
        Some(v10::TaskStatus {
            state: state as i32,
            ..v10::TaskStatus::default()
        })
    };
    let items = paced(plan, move |i| {
        let payload = if i == 0 {
            Payload::Task(v10::Task {
                id: task.clone(),
                context_id: context.clone(),
                status: status(v10::TaskState::Submitted),
                ..v10::Task::default()
            })
        } else if i <= plan.events {
            let text = format!("{filler} {} ", marker(now_micros()));
            Payload::ArtifactUpdate(v10::TaskArtifactUpdateEvent {
                task_id: task.clone(),
                context_id: context.clone(),
                artifact: Some(v10::Artifact {
                    artifact_id: "answer".to_owned(),
                    parts: vec![v10::Part {
                        content: Some(v10::part::Content::Text(text)),
                        ..v10::Part::default()
                    }],
                    ..v10::Artifact::default()
                }),
                append: i > 1,
                last_chunk: i == plan.events,
                metadata: None,
            })
        } else {
            Payload::StatusUpdate(v10::TaskStatusUpdateEvent {
                task_id: task.clone(),
                context_id: context.clone(),
                status: status(v10::TaskState::Completed),
                metadata: None,
            })
        };
        let item = v10::StreamResponse {
            payload: Some(payload),
        };
        Ok::<_, Infallible>(Frame::data(framed(&item)))
    });
    let end = futures::stream::once(async { Ok(Frame::trailers(ok_trailers())) });
    use futures::StreamExt;
    grpc_response(BodyExt::boxed(StreamBody::new(items.chain(end))))
}
