//! An HTTP request of a binding (JSON-RPC, HTTP+JSON), and how it is
//! sent: streams over plain HTTP on a connection of the relay's own
//! (`direct`), everything else through reqwest.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, Method, header};
use bytes::Bytes;
use futures::TryStreamExt;
use url::Url;

use crate::upstream::{Agent, BodyError, StreamResponse, UpstreamError, direct};

/// What the relay can read: an A2A stream, or one JSON answer.
const CONVERTED_ACCEPT: &str = "text/event-stream, application/json";

/// One HTTP request of a binding.
#[derive(Debug, Clone)]
pub struct HttpCall {
    pub method: Method,
    pub url: Url,
    /// A JSON body, when the call has one.
    pub body: Option<Bytes>,
    /// The answer is an event stream.
    pub streams: bool,
    /// Sent with `A2A-Version: 1.0` (a 1.0 server takes a call without
    /// it for a 0.3 one).
    pub v10: bool,
}

impl HttpCall {
    pub fn headers(&self, headers: &mut HeaderMap) {
        if self.body.is_some() {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        if self.streams {
            converted(headers);
        }
        if self.v10 {
            headers.insert("a2a-version", HeaderValue::from_static("1.0"));
        }
    }
}

/// A call whose answer the gateway converts: it, not the client, says
/// what it accepts, and asks for no compression (the converter needs
/// plain bytes).
pub fn converted(headers: &mut HeaderMap) {
    // The client's place in the gateway's stream, not in the agent's.
    headers.remove("last-event-id");
    headers.insert(header::ACCEPT, HeaderValue::from_static(CONVERTED_ACCEPT));
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

/// Sends `call` with `headers`, its answer's head within `deadline`. A
/// stream's body has no read timer here: the relay's idle timer is it.
pub async fn send(
    agent: &Agent,
    call: &HttpCall,
    headers: HeaderMap,
    deadline: Duration,
) -> Result<StreamResponse, UpstreamError> {
    let client = match call.streams {
        true => agent.stream_client(),
        false => agent.client(),
    };
    let mut request = client
        .request(call.method.clone(), call.url.clone())
        .headers(headers);
    if let Some(body) = &call.body {
        request = request.body(body.clone());
    }
    let request = request.build().map_err(UpstreamError::Request)?;
    send_request(agent, &client, request, call.streams, deadline).await
}

/// Sends a built request (a binding's, or a client's own passed on).
pub async fn send_request(
    agent: &Agent,
    client: &reqwest::Client,
    request: reqwest::Request,
    streams: bool,
    deadline: Duration,
) -> Result<StreamResponse, UpstreamError> {
    let send = async {
        if streams && direct::serves(&request) {
            let response = direct::send(&request, agent.config.connect_timeout)
                .await
                .map_err(UpstreamError::Direct)?;
            return Ok(StreamResponse {
                unauthenticated: response.status == reqwest::StatusCode::UNAUTHORIZED,
                busy: busy(response.status),
                status: response.status,
                headers: response.headers,
                body: Box::pin(response.body.map_err(BodyError::Direct)),
                handed_one_by_one: false,
            });
        }
        let response = client
            .execute(request)
            .await
            .map_err(UpstreamError::Request)?;
        Ok(StreamResponse {
            unauthenticated: response.status() == reqwest::StatusCode::UNAUTHORIZED,
            busy: busy(response.status()),
            status: response.status(),
            headers: response.headers().clone(),
            body: Box::pin(response.bytes_stream().map_err(BodyError::Reqwest)),
            handed_one_by_one: true,
        })
    };
    match tokio::time::timeout(deadline, send).await {
        Ok(result) => result,
        Err(_) => Err(UpstreamError::NoResponse(deadline)),
    }
}

/// A status that asks to be called again later.
fn busy(status: reqwest::StatusCode) -> bool {
    use reqwest::StatusCode;
    status.is_server_error()
        || [StatusCode::TOO_MANY_REQUESTS, StatusCode::REQUEST_TIMEOUT].contains(&status)
}
