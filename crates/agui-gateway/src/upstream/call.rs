//! The calls the gateway makes to an agent, and the layers every binding
//! shares. A `Call` (`rpc`) says what is asked in no binding; the agent's `Route`
//! says which binding writes it (`binding`). Around every one, written
//! once: the request's headers as the forwarding policy made them, the
//! agent's token and its renewal after a refusal, the deadline for the
//! answer's head, and a client span. A client's own call that is passed
//! on (`pass`) or converted (`forward`) goes through the same layers.

use std::future::Future;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, Method};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use url::Url;

use super::answer::{Answer, Growing};
use super::binding::Prepared;
use super::binding::http::{self, converted};
use super::outbound::{Forwarded, Renewal};
use super::route::Route;
use super::rpc::Call;
use super::{Agent, StreamResponse, UpstreamError};
use crate::obs::telemetry::CallSpan;
use crate::random::random_u64;

/// A call's answer (its head, its body still to read), and its client
/// span: held by whoever reads the answer (dropping it ends the span).
pub struct Called {
    pub answer: Result<StreamResponse, UpstreamError>,
    pub span: CallSpan,
}

impl Called {
    fn refused(forwarded: &Forwarded) -> Option<Called> {
        let refusal = forwarded.refusal()?;
        Some(Called {
            answer: Err(UpstreamError::Refused(refusal.clone())),
            span: CallSpan::default(),
        })
    }
}

impl Agent {
    /// Makes `call` the way `route` reaches the agent, with the request's
    /// headers; nothing is sent when the request may not call the agent
    /// (`Forwarded::refusal`).
    pub async fn call(&self, route: &Route, call: Call<'_>, forwarded: &Forwarded) -> Called {
        if let Some(refused) = Called::refused(forwarded) {
            return refused;
        }
        let rpc_id = format!("agui-gateway-{:x}", random_u64());
        let prepared = Prepared::new(route, &call, &rpc_id);
        let (mut headers, span) = forwarded.for_gateway_body(self);
        prepared.headers(&mut headers);
        if let Call::Send { activate, .. } = call
            && !activate.is_empty()
            && let Ok(list) = HeaderValue::from_str(&activate.join(","))
        {
            // Both spellings: 1.0 renamed the 0.3 header.
            headers.insert("a2a-extensions", list.clone());
            headers.insert("x-a2a-extensions", list);
        }
        let deadline = self.config.idle_timeout;
        let answer = self
            .renewing(forwarded.renewal().as_ref(), headers, |headers| {
                prepared.send(self, headers, deadline)
            })
            .await;
        Called { answer, span }
    }

    /// Makes `call` and reads its whole answer, when it succeeds, within
    /// `limit` bytes and the budget of answers read at once
    /// (`answer::Growing`, checked as it arrives) and the agent's idle
    /// timeout.
    pub async fn answer(
        &self,
        route: &Route,
        call: Call<'_>,
        forwarded: &Forwarded,
        limit: usize,
    ) -> Option<Answer> {
        let read = async {
            let Called { answer, span } = self.call(route, call, forwarded).await;
            let Ok(response) = answer else {
                span.fail("unreachable");
                return None;
            };
            span.answered(response.status);
            if !response.status.is_success() {
                return None;
            }
            read_whole(response, limit).await
        };
        tokio::time::timeout(self.config.idle_timeout, read)
            .await
            .ok()?
    }

    /// A client's own A2A call whose answer the gateway converts: as it
    /// came, but for the headers of a converted call. A gRPC agent takes
    /// the JSON-RPC body as the call it stands for.
    pub async fn forward(
        &self,
        route: &Route,
        (method, url): (Method, Url),
        forwarded: &Forwarded,
        body: Bytes,
    ) -> Called {
        if let Some(refused) = Called::refused(forwarded) {
            return refused;
        }
        let (mut headers, span) = forwarded.for_call(self);
        converted(&mut headers);
        let called = json_rpc_method(&body);
        if called.as_deref().is_some_and(names_a_1_0_method) && !headers.contains_key("a2a-version")
        {
            headers.insert("a2a-version", HeaderValue::from_static("1.0"));
        }
        // Only a JSON-RPC call can be made as the gRPC call it stands for;
        // anything else (an HTTP+JSON path) goes to the configured upstream.
        let configured;
        let route = match (&route.grpc, &called) {
            (Some(_), None) => {
                configured = self.configured_route();
                &configured
            }
            _ => route,
        };
        let answer = self
            .renewing(forwarded.renewal().as_ref(), headers, |headers| {
                self.send_as_came(route, (&method, &url, &body), headers, true)
            })
            .await;
        Called { answer, span }
    }

    /// Transparent mode: the client's request as it came, to the same
    /// path (the JSON-RPC call it stands for, to an agent reached over
    /// gRPC by its configuration). `deadline` bounds the answer's head
    /// instead of the idle timeout.
    pub async fn pass(
        &self,
        (method, url): (Method, Url),
        forwarded: &Forwarded,
        body: Bytes,
        deadline: Option<Duration>,
    ) -> Called {
        let (headers, span) = forwarded.for_call(self);
        let route = self.configured_route();
        let answer = self
            .renewing(forwarded.renewal().as_ref(), headers, |headers| async {
                let send = self.send_as_came(&route, (&method, &url, &body), headers, false);
                match deadline {
                    Some(deadline) => tokio::time::timeout(deadline, send)
                        .await
                        .unwrap_or(Err(UpstreamError::NoResponse(deadline))),
                    None => send.await,
                }
            })
            .await;
        Called { answer, span }
    }

    async fn send_as_came(
        &self,
        route: &Route,
        (method, url, body): (&Method, &Url, &Bytes),
        headers: HeaderMap,
        streams: bool,
    ) -> Result<StreamResponse, UpstreamError> {
        let deadline = self.config.idle_timeout;
        if let Some(grpc) = &route.grpc {
            return super::binding::send_json_rpc(grpc, body, &headers, deadline).await;
        }
        let client = match streams {
            true => self.stream_client(),
            false => self.client(),
        };
        let request = client
            .request(method.clone(), url.clone())
            .headers(headers)
            .body(body.clone())
            .build()
            .map_err(UpstreamError::Request)?;
        http::send_request(self, &client, request, streams, deadline).await
    }

    /// Sends with `headers`; after the agent refused the gateway's token
    /// (HTTP 401, gRPC `UNAUTHENTICATED`), once more with a new one when
    /// the token was its likely cause (`Renewal`). The answer to the
    /// second is final.
    async fn renewing<F, Fut>(
        &self,
        renewal: Option<&Renewal>,
        headers: HeaderMap,
        send: F,
    ) -> Result<StreamResponse, UpstreamError>
    where
        F: Fn(HeaderMap) -> Fut,
        Fut: Future<Output = Result<StreamResponse, UpstreamError>>,
    {
        let spare = renewal.map(|_| headers.clone());
        let response = send(headers).await?;
        if response.unauthenticated
            && let (Some(renewal), Some(spare)) = (renewal, spare)
            && let Some(again) = renewal.renewed(self, spare, &response.headers).await
        {
            return send(again).await;
        }
        Ok(response)
    }
}

/// A successful answer's whole body, within `limit` and the shared budget.
pub async fn read_whole(response: StreamResponse, limit: usize) -> Option<Answer> {
    let mut body = response.body;
    let mut document = Growing::default();
    while let Some(chunk) = body.next().await {
        document.extend(&chunk.ok()?, limit).ok()?;
    }
    Some(document.done())
}

/// The method a JSON-RPC call names, when the body is one.
fn json_rpc_method(body: &[u8]) -> Option<String> {
    let call = serde_json::from_slice::<Value>(body).ok()?;
    Some(call.get("method")?.as_str()?.to_owned())
}

/// 1.0 JSON-RPC method names are PascalCase (`SendStreamingMessage`), 0.3
/// ones are not (`message/stream`).
fn names_a_1_0_method(method: &str) -> bool {
    method.starts_with(|c: char| c.is_ascii_uppercase())
}
