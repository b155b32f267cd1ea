//! A client's own gRPC call, sent to the agent's gRPC interface as it
//! came: the request's message bytes and the policy's headers go out, the
//! agent's frames and trailers come back one for one. The gateway reads
//! none of it, except a card (`pass_collected`, then `cards`), whose
//! addresses it rewrites.
//!
//! What the gateway bounds: the wait for the answer's head (the agent's
//! idle timeout, or the caller's `grpc-timeout` when shorter), then each
//! wait for the next frame (the idle timeout). A stream the agent breaks
//! or leaves idle ends with trailers of the gateway's (`UNAVAILABLE`,
//! `DEADLINE_EXCEEDED`), never without: a gRPC client reads a body with
//! no `grpc-status` as an internal error of its own.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyStream, Full, StreamBody};
use tokio_util::sync::CancellationToken;
use tonic::Code;
use tonic::body::Body;
use tonic::client::GrpcService;

use crate::client::GrpcAgent;
use crate::{v03, v10};

/// The two A2A services a gRPC client may call.
const SERVICES: [&str; 2] = [v03::SERVICE, v10::SERVICE];

/// A gRPC method of one of A2A's services, from a request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    pub service: &'static str,
    pub name: String,
}

impl Method {
    /// `/{service}/{method}`, the service one of A2A's; anything else is
    /// no A2A call (`UNIMPLEMENTED`).
    pub fn of_path(path: &str) -> Option<Method> {
        let (service, name) = path.strip_prefix('/')?.split_once('/')?;
        let service = SERVICES.into_iter().find(|s| *s == service)?;
        let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric());
        plain.then(|| Method {
            service,
            name: name.to_owned(),
        })
    }

    pub fn path(&self) -> String {
        format!("/{}/{}", self.service, self.name)
    }

    /// The calls whose answer is an agent card.
    pub fn is_card(&self) -> bool {
        matches!(
            (self.service, self.name.as_str()),
            (v10::SERVICE, "GetExtendedAgentCard") | (v03::SERVICE, "GetAgentCard")
        )
    }
}

/// The headers that are gRPC's protocol, not metadata: they go to the
/// agent whatever the forwarding policy says of the caller's headers.
const PROTOCOL: [&str; 4] = [
    "content-type",
    "grpc-timeout",
    "grpc-encoding",
    "grpc-accept-encoding",
];

/// `grpc-timeout`: an integer of at most 8 digits and its unit.
pub fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

impl GrpcAgent {
    /// Sends `method` with the message bytes `body` (its five-byte frame
    /// head included) and `metadata` (the policy's headers), adding the
    /// caller's protocol headers from `incoming`. `idle` bounds the wait
    /// for the head and each frame after it.
    pub async fn pass(
        &self,
        method: &Method,
        incoming: &HeaderMap,
        metadata: HeaderMap,
        body: Bytes,
        bounds: Bounds,
    ) -> Response<Body> {
        let idle = bounds.idle;
        let mut request = Request::new(Body::new(Full::new(body)));
        *request.method_mut() = http::Method::POST;
        *request.version_mut() = http::Version::HTTP_2;
        let Ok(uri) = method.path().parse() else {
            return trailers_only(Code::Unimplemented, "no such A2A method");
        };
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        *headers = metadata;
        // `host` is HTTP/1.1's: the channel's origin is the authority.
        headers.remove(header::HOST);
        for name in PROTOCOL {
            headers.remove(name);
            for value in incoming.get_all(name) {
                headers.append(name, value.clone());
            }
        }
        if method.is_card() {
            // The gateway reads the card: it must come uncompressed.
            headers.remove("grpc-accept-encoding");
        }
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
        let head_within = grpc_timeout(incoming).map_or(idle, |asked| asked.min(idle));
        let mut channel = self.channel.clone();
        let sent = async {
            futures::future::poll_fn(|cx| GrpcService::poll_ready(&mut channel, cx)).await?;
            GrpcService::call(&mut channel, request).await
        };
        let response = match tokio::time::timeout(head_within, sent).await {
            Err(_) => {
                return trailers_only(
                    Code::DeadlineExceeded,
                    "upstream: the agent did not answer in time",
                );
            }
            Ok(Err(err)) => {
                tracing::debug!("gRPC passthrough: {err}");
                return trailers_only(Code::Unavailable, "upstream: the agent is unreachable");
            }
            Ok(Ok(response)) => response,
        };
        let (parts, body) = response.into_parts();
        if parts.status != StatusCode::OK {
            // Not a gRPC answer (a proxy's page, say): the gRPC code of
            // its HTTP status, not its body.
            return trailers_only(
                of_http(parts.status),
                &format!("upstream: the agent answered HTTP {}", parts.status),
            );
        }
        if parts.headers.contains_key("grpc-status") {
            // Trailers-only (the agent's error status): the head must end
            // the stream, as it did, or the client waits for trailers.
            return Response::from_parts(parts, Body::empty());
        }
        let frames = watched(BodyStream::new(body), bounds);
        let mut answer = Response::new(Body::new(StreamBody::new(frames)));
        *answer.headers_mut() = parts.headers;
        answer
    }

    /// A unary call's whole answer, for a card the gateway rewrites: its
    /// head, its one message (frame head included) and its trailers; at
    /// most `max` bytes of message.
    pub async fn pass_collected(
        &self,
        method: &Method,
        incoming: &HeaderMap,
        metadata: HeaderMap,
        body: Bytes,
        bounds: Bounds,
    ) -> Result<Collected, Response<Body>> {
        let max = self.max_message_bytes;
        let answer = self.pass(method, incoming, metadata, body, bounds).await;
        let (parts, body) = answer.into_parts();
        let mut message = Vec::new();
        let mut trailers = HeaderMap::new();
        let mut frames = BodyStream::new(body);
        while let Some(frame) = frames.next().await {
            let Ok(frame) = frame else {
                return Err(trailers_only(
                    Code::Unavailable,
                    "upstream: the agent's answer broke off",
                ));
            };
            match frame.into_data() {
                Ok(data) => {
                    if message.len() + data.len() > max {
                        return Err(trailers_only(
                            Code::ResourceExhausted,
                            "upstream: the agent's card is larger than the gateway takes",
                        ));
                    }
                    message.extend_from_slice(&data);
                }
                Err(frame) => {
                    if let Ok(more) = frame.into_trailers() {
                        trailers.extend(more);
                    }
                }
            }
        }
        Ok(Collected {
            headers: parts.headers,
            message,
            trailers,
        })
    }
}

/// A unary gRPC answer, whole.
pub struct Collected {
    pub headers: HeaderMap,
    /// The message frames as sent: empty for an answer with no message.
    pub message: Vec<u8>,
    pub trailers: HeaderMap,
}

impl Collected {
    /// The answer again, its message replaced by `message` (framed here).
    pub fn into_response(self, message: Option<Vec<u8>>) -> Response<Body> {
        if self.headers.contains_key("grpc-status") {
            // Trailers-only, as it came.
            let mut answer = Response::new(Body::empty());
            *answer.headers_mut() = self.headers;
            return answer;
        }
        let mut body = Vec::new();
        match message {
            Some(message) => {
                body.push(0);
                let length = u32::try_from(message.len()).unwrap_or(u32::MAX);
                body.extend_from_slice(&length.to_be_bytes());
                body.extend_from_slice(&message);
            }
            None => body = self.message,
        }
        let mut frames = vec![Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(
            body,
        )))];
        if !self.trailers.is_empty() {
            frames.push(Ok(Frame::trailers(self.trailers)));
        }
        let mut answer = Response::new(Body::new(StreamBody::new(futures::stream::iter(frames))));
        *answer.headers_mut() = self.headers;
        answer.headers_mut().remove(header::CONTENT_LENGTH);
        answer
    }

    /// The one uncompressed message, if that is what the answer holds.
    pub fn single_message(&self) -> Option<&[u8]> {
        let (head, rest) = self.message.split_first_chunk::<5>()?;
        let length = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        (head[0] == 0 && usize::try_from(length).ok() == Some(rest.len())).then_some(rest)
    }
}

/// What bounds a passed-through call.
pub struct Bounds {
    /// The wait for the answer's head and for each frame after it.
    pub idle: Duration,
    /// The gateway stops: the call ends with `UNAVAILABLE`.
    pub stop: CancellationToken,
}

/// The agent's frames, each due within the idle timeout; a break, a stall
/// or the gateway stopping ends the stream with the gateway's trailers
/// (the agent's own, once sent, end it).
fn watched<B>(
    frames: BodyStream<B>,
    Bounds { idle, stop }: Bounds,
) -> impl futures::Stream<Item = Result<Frame<Bytes>, std::convert::Infallible>> + Send + 'static
where
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    futures::stream::unfold(
        (frames, false, stop),
        move |(mut frames, ended, stop)| async move {
            if ended {
                return None;
            }
            let next = tokio::time::timeout(idle, frames.next());
            let next = tokio::select! {
                next = next => next,
                () = stop.cancelled() => {
                    let end = trailers(Code::Unavailable, "gateway: shutting down");
                    return Some((Ok(Frame::trailers(end)), (frames, true, stop)));
                }
            };
            let frame = match next {
                Ok(Some(Ok(frame))) => frame,
                // The agent ended the stream without a status: say so, as
                // a gRPC client would read no trailers as its own error.
                Ok(None) => Frame::trailers(trailers(
                    Code::Unavailable,
                    "upstream: the agent's stream ended without a status",
                )),
                Ok(Some(Err(err))) => {
                    tracing::debug!("gRPC passthrough: the agent's stream broke: {err}");
                    Frame::trailers(trailers(
                        Code::Unavailable,
                        "upstream: the agent's stream broke off",
                    ))
                }
                Err(_) => Frame::trailers(trailers(
                    Code::DeadlineExceeded,
                    "upstream: the agent sent nothing within the idle timeout",
                )),
            };
            let last = frame.is_trailers();
            Some((Ok(frame), (frames, last, stop)))
        },
    )
}

/// The trailers of a status the gateway ends a call with.
pub fn trailers(code: Code, message: &str) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    // Only a message that is no header value fails: then the code alone.
    if tonic::Status::new(code, message)
        .add_header(&mut trailers)
        .is_err()
    {
        let _ = tonic::Status::new(code, "").add_header(&mut trailers);
    }
    trailers
}

/// A call the gateway answers itself: a head that is the trailers too,
/// with an empty body of the caller's type.
pub fn trailers_only<B: Default>(code: Code, message: &str) -> Response<B> {
    tonic::Status::new(code, message).into_http()
}

/// The gRPC code of an HTTP status (gRPC's own table for statuses a
/// proxy makes; the gateway's 400 and 413 say more than `INTERNAL`).
pub fn of_http(status: StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        408 | 504 => Code::DeadlineExceeded,
        413 | 429 => Code::ResourceExhausted,
        502 | 503 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// Whether a request is a gRPC call (`application/grpc`, `+proto` or any
/// other codec's suffix; not gRPC-Web, which is HTTP/1.1's and not served).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.trim().to_ascii_lowercase();
            v == "application/grpc"
                || v.starts_with("application/grpc+")
                || v.starts_with("application/grpc;")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_a2a_services_only() {
        let m = Method::of_path("/lf.a2a.v1.A2AService/SendStreamingMessage").unwrap();
        assert_eq!(m.service, "lf.a2a.v1.A2AService");
        assert!(!m.is_card());
        assert!(
            Method::of_path("/a2a.v1.A2AService/GetAgentCard")
                .unwrap()
                .is_card()
        );
        assert!(
            Method::of_path("/lf.a2a.v1.A2AService/GetExtendedAgentCard")
                .unwrap()
                .is_card()
        );
        assert!(Method::of_path("/grpc.health.v1.Health/Check").is_none());
        assert!(Method::of_path("/lf.a2a.v1.A2AService/../x").is_none());
        assert!(Method::of_path("/lf.a2a.v1.A2AService/").is_none());
        assert!(Method::of_path("/lf.a2a.v1.A2AService/Send/x").is_none());
    }

    #[test]
    fn grpc_timeouts_read_every_unit_and_refuse_the_rest() {
        let at = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("grpc-timeout", HeaderValue::from_str(v).unwrap());
            grpc_timeout(&h)
        };
        assert_eq!(at("2S"), Some(Duration::from_secs(2)));
        assert_eq!(at("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(at("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(at("99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(at("123456789S"), None);
        assert_eq!(at("S"), None);
        assert_eq!(at("10x"), None);
        assert_eq!(at(""), None);
    }

    #[test]
    fn grpc_content_types() {
        let of = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(v).unwrap());
            is_grpc(&h)
        };
        assert!(of("application/grpc"));
        assert!(of("application/grpc+proto"));
        assert!(of("Application/GRPC"));
        assert!(!of("application/grpc-web"));
        assert!(!of("application/json"));
    }

    #[test]
    fn a_single_message_is_read_from_its_frame() {
        let answer = |bytes: Vec<u8>| Collected {
            headers: HeaderMap::new(),
            message: bytes,
            trailers: HeaderMap::new(),
        };
        assert_eq!(
            answer(vec![0, 0, 0, 0, 2, 8, 1]).single_message(),
            Some(&[8u8, 1][..])
        );
        assert_eq!(answer(vec![1, 0, 0, 0, 2, 8, 1]).single_message(), None);
        assert_eq!(answer(vec![0, 0, 0, 0, 3, 8, 1]).single_message(), None);
        assert_eq!(answer(vec![0, 0, 0]).single_message(), None);
    }
}
