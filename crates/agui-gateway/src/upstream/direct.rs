//! A converted stream's upstream call on a connection of its own, read in
//! the relay's own task.
//!
//! Why not reqwest for these (measured, BENCHMARKS.md "Per-event cost"):
//! reqwest reads the socket in a connection task and hands the body over
//! one chunk at a time through a channel of one, so every chunk costs two
//! task wake-ups and a burst needs scheduler turns to leave in one write;
//! and each of its connections holds about 57 KB of buffers and channels
//! that cannot be sized. Here the relay's poll reads the socket itself into
//! a buffer on the stack, de-chunks everything that came in one go, and
//! keeps only an incomplete remainder between reads: a held stream costs
//! the socket and a few hundred bytes.
//!
//! HTTP/1.1 over plain TCP, one request per connection (closed when the
//! body ends), no redirects, no proxy: what a converted stream's call needs.
//! HTTPS upstreams, and every other call (cards, passthrough, cancels,
//! re-attaching), stay on reqwest.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use bytes::Bytes;
use futures::Stream;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// A response head larger than this is refused.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Header lines a response head may have.
const MAX_HEADERS: usize = 128;
/// One read, into a buffer on the stack.
const READ_BYTES: usize = 16 * 1024;
/// Reads per poll at most: a poll hands over up to this many buffers.
const READS_PER_POLL: usize = 4;
/// A chunk-size line or a trailer line longer than this is refused.
const MAX_LINE_BYTES: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    #[error("connecting failed: {0}")]
    Connect(io::Error),
    #[error("connecting took longer than {} s", .0.as_secs())]
    ConnectTimeout(Duration),
    #[error("the upstream connection failed: {0}")]
    Io(io::Error),
    #[error("the upstream's answer is not valid HTTP/1.1: {0}")]
    Protocol(&'static str),
}

impl DirectError {
    pub fn is_connect(&self) -> bool {
        matches!(
            self,
            DirectError::Connect(_) | DirectError::ConnectTimeout(_)
        )
    }

    pub fn is_connect_timeout(&self) -> bool {
        matches!(self, DirectError::ConnectTimeout(_))
    }
}

/// Whether `request` can take this path: a plain-HTTP URL and a body in
/// memory (the gateway's stream calls all have one).
pub fn serves(request: &reqwest::Request) -> bool {
    request.url().scheme() == "http"
        && request.url().host_str().is_some()
        && request.body().is_none_or(|body| body.as_bytes().is_some())
}

/// A response head, and its body as a stream of de-chunked bytes.
pub struct DirectResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: DirectBody,
}

/// Sends `request` (an `http://` URL, a body in memory) and reads the
/// response head. The caller bounds the whole by its own timeout.
pub async fn send(
    request: &reqwest::Request,
    connect_timeout: Duration,
) -> Result<DirectResponse, DirectError> {
    let url = request.url();
    let host = url
        .host_str()
        .ok_or(DirectError::Protocol("the URL has no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let connect = TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port));
    let mut stream = tokio::time::timeout(connect_timeout, connect)
        .await
        .map_err(|_| DirectError::ConnectTimeout(connect_timeout))?
        .map_err(DirectError::Connect)?;
    // Each event must leave at once: no Nagle delay on the request either.
    let _ = stream.set_nodelay(true);
    let message = request_bytes(request);
    stream.write_all(&message).await.map_err(DirectError::Io)?;
    let mut pending = Vec::new();
    loop {
        if let Some((head, used)) = parse_head(&pending)? {
            pending.drain(..used);
            if head.status.is_informational() {
                // `100 Continue` and the like: the real head follows.
                continue;
            }
            let mut body = DirectBody {
                stream: Some(stream),
                pending: Vec::new(),
                state: Framing::of(&head.headers)?,
                first: None,
            };
            // What came in with the head is the body's start.
            let mut first = Vec::new();
            body.decode(&pending, &mut first)?;
            body.first = (!first.is_empty()).then(|| Bytes::from(first));
            return Ok(DirectResponse {
                status: head.status,
                headers: head.headers,
                body,
            });
        }
        if pending.len() > MAX_HEAD_BYTES {
            return Err(DirectError::Protocol("the response head is too large"));
        }
        // Heads are small: read into the buffer itself, 2 KiB at a time.
        pending.reserve(2048);
        let read = stream
            .read_buf(&mut pending)
            .await
            .map_err(DirectError::Io)?;
        if read == 0 {
            return Err(DirectError::Protocol(
                "the connection closed before a response head",
            ));
        }
    }
}

/// The request as bytes: its head, then its body. Framing headers are the
/// gateway's own; everything else as the request carries it.
fn request_bytes(request: &reqwest::Request) -> Vec<u8> {
    let url = request.url();
    let body = request
        .body()
        .and_then(reqwest::Body::as_bytes)
        .unwrap_or(&[]);
    let mut out = Vec::with_capacity(256 + body.len());
    out.extend_from_slice(request.method().as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(url.path().as_bytes());
    if let Some(query) = url.query() {
        out.push(b'?');
        out.extend_from_slice(query.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(url.host_str().unwrap_or_default().as_bytes());
    if let Some(port) = url.port() {
        out.push(b':');
        out.extend_from_slice(port.to_string().as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    let headers = request.headers();
    for (name, value) in headers {
        if matches!(
            *name,
            header::HOST | header::CONTENT_LENGTH | header::TRANSFER_ENCODING | header::CONNECTION
        ) {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !headers.contains_key(header::ACCEPT) {
        out.extend_from_slice(b"accept: */*\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    // No `connection: close`: the gateway closes the connection itself
    // when the body ends, and sends no hop-by-hop header upstream.
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
    out
}

struct Head {
    status: StatusCode,
    headers: HeaderMap,
}

/// A complete head and the bytes it took, or `None` while incomplete.
fn parse_head(bytes: &[u8]) -> Result<Option<(Head, usize)>, DirectError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut slots);
    let used = match response.parse(bytes) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(DirectError::Protocol("too many response headers"));
        }
        Err(_) => return Err(DirectError::Protocol("a malformed response head")),
    };
    let status = response
        .code
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or(DirectError::Protocol("a malformed status"))?;
    let mut headers = HeaderMap::with_capacity(response.headers.len());
    for slot in response.headers.iter() {
        let name = HeaderName::from_bytes(slot.name.as_bytes())
            .map_err(|_| DirectError::Protocol("a malformed header name"))?;
        let value = HeaderValue::from_bytes(slot.value)
            .map_err(|_| DirectError::Protocol("a malformed header value"))?;
        headers.append(name, value);
    }
    Ok(Some((Head { status, headers }, used)))
}

/// Where the body decoder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Expecting a chunk-size line.
    ChunkSize,
    /// Inside a chunk, this many data bytes to go.
    ChunkData(u64),
    /// After a chunk's data: its CRLF.
    ChunkEnd,
    /// After the last chunk: trailer lines up to an empty one.
    Trailers,
    /// `Content-Length`: this many bytes to go.
    Length(u64),
    /// Neither: the body ends when the connection closes.
    UntilClose,
    /// The body is complete.
    Done,
}

impl Framing {
    fn of(headers: &HeaderMap) -> Result<Framing, DirectError> {
        // Chunked when it is the last coding applied (RFC 9112 6.3).
        let chunked = headers
            .get_all(header::TRANSFER_ENCODING)
            .iter()
            .next_back()
            .and_then(|v| v.as_bytes().split(|&b| b == b',').next_back())
            .is_some_and(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        if chunked {
            return Ok(Framing::ChunkSize);
        }
        let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
        match (lengths.next(), lengths.next()) {
            (None, _) => Ok(Framing::UntilClose),
            (Some(length), None) => std::str::from_utf8(length.as_bytes())
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map(|n| {
                    if n == 0 {
                        Framing::Done
                    } else {
                        Framing::Length(n)
                    }
                })
                .ok_or(DirectError::Protocol("a malformed Content-Length")),
            (Some(_), Some(_)) => Err(DirectError::Protocol("two Content-Length headers")),
        }
    }
}

/// A response body read in the caller's task: each poll reads what the
/// socket has (a few reads at most) and hands over everything complete.
pub struct DirectBody {
    stream: Option<TcpStream>,
    /// Bytes read but not decoded yet: an incomplete line.
    pending: Vec<u8>,
    state: Framing,
    /// What came in with the response head.
    first: Option<Bytes>,
}

impl DirectBody {
    /// Decodes `input` (after `pending`), appending body bytes to `out`.
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), DirectError> {
        let joined;
        let mut bytes = if self.pending.is_empty() {
            input
        } else {
            self.pending.extend_from_slice(input);
            joined = std::mem::take(&mut self.pending);
            &joined[..]
        };
        while !bytes.is_empty() {
            match self.state {
                Framing::Done => break,
                Framing::UntilClose => {
                    out.extend_from_slice(bytes);
                    bytes = &[];
                }
                Framing::Length(left) | Framing::ChunkData(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
                    out.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    let left = left - take as u64;
                    self.state = match (self.state, left) {
                        (Framing::Length(_), 0) => Framing::Done,
                        (Framing::Length(_), n) => Framing::Length(n),
                        (_, 0) => Framing::ChunkEnd,
                        (_, n) => Framing::ChunkData(n),
                    };
                }
                Framing::ChunkSize | Framing::ChunkEnd | Framing::Trailers => {
                    // Lines end with CRLF; a bare LF is taken too.
                    let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
                        if bytes.len() > MAX_LINE_BYTES {
                            return Err(DirectError::Protocol("a chunk line is too long"));
                        }
                        self.pending = bytes.to_vec();
                        return Ok(());
                    };
                    let line = bytes[..end].strip_suffix(b"\r").unwrap_or(&bytes[..end]);
                    bytes = &bytes[end + 1..];
                    self.state = match self.state {
                        Framing::ChunkEnd if line.is_empty() => Framing::ChunkSize,
                        Framing::ChunkEnd => {
                            return Err(DirectError::Protocol("a chunk longer than its size"));
                        }
                        Framing::ChunkSize => match chunk_size(line)? {
                            0 => Framing::Trailers,
                            n => Framing::ChunkData(n),
                        },
                        _ if line.is_empty() => Framing::Done,
                        // A trailer field: not used.
                        _ => Framing::Trailers,
                    };
                }
            }
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.state == Framing::Done
    }
}

/// The size of a chunk-size line (`1a;ext=1`).
fn chunk_size(line: &[u8]) -> Result<u64, DirectError> {
    let digits = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if digits.is_empty() || digits.len() > 15 {
        return Err(DirectError::Protocol("a malformed chunk size"));
    }
    digits.iter().try_fold(0u64, |size, &digit| {
        let value = (digit as char)
            .to_digit(16)
            .ok_or(DirectError::Protocol("a malformed chunk size"))?;
        Ok(size * 16 + u64::from(value))
    })
}

impl Stream for DirectBody {
    type Item = Result<Bytes, DirectError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        let mut out = Vec::new();
        for _ in 0..READS_PER_POLL {
            if this.finished() {
                break;
            }
            let Some(stream) = this.stream.as_mut() else {
                break;
            };
            // Not zeroed: `filled` is what the read wrote.
            let mut buffer = [MaybeUninit::<u8>::uninit(); READ_BYTES];
            let mut read = ReadBuf::uninit(&mut buffer);
            match Pin::new(stream).poll_read(cx, &mut read) {
                Poll::Pending => break,
                Poll::Ready(Err(err)) => {
                    this.stream = None;
                    return Poll::Ready(Some(Err(DirectError::Io(err))));
                }
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    this.stream = None;
                    if this.state == Framing::UntilClose {
                        this.state = Framing::Done;
                        break;
                    }
                    return Poll::Ready(Some(Err(DirectError::Protocol(
                        "the connection closed inside the body",
                    ))));
                }
                Poll::Ready(Ok(())) => {
                    let filled = read.filled();
                    if let Err(err) = this.decode(filled, &mut out) {
                        this.stream = None;
                        return Poll::Ready(Some(Err(err)));
                    }
                    if filled.len() < READ_BYTES {
                        // The socket is empty for now (tokio will not
                        // read it again before it is readable).
                        break;
                    }
                }
            }
        }
        if !out.is_empty() {
            return Poll::Ready(Some(Ok(Bytes::from(out))));
        }
        if this.finished() || this.stream.is_none() {
            // Done: the connection closes with the body.
            this.stream = None;
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a panic is the failure report

    use super::*;

    fn body(state: Framing) -> DirectBody {
        DirectBody {
            stream: None,
            pending: Vec::new(),
            state,
            first: None,
        }
    }

    /// Decodes `wire` fed in pieces cut at `cuts`.
    fn decode_in_pieces(
        state: Framing,
        wire: &[u8],
        cuts: &[usize],
    ) -> Result<(Vec<u8>, bool), DirectError> {
        let mut decoder = body(state);
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain([wire.len()].iter()) {
            let cut = cut.clamp(at, wire.len());
            decoder.decode(&wire[at..cut], &mut out)?;
            at = cut;
        }
        Ok((out, decoder.finished()))
    }

    const CHUNKED: &[u8] = b"5\r\ndata:\r\n18;name=value\r\n {\"a\":1}\n\ndata: {\"b\":22}\n0\r\nx-trailer: 1\r\n\r\nignored";
    const DECODED: &[u8] = b"data: {\"a\":1}\n\ndata: {\"b\":22}";

    #[test]
    fn a_chunked_body_decodes_the_same_however_it_is_cut() {
        for first in 0..=CHUNKED.len() {
            for second in first..=CHUNKED.len() {
                let (out, done) =
                    decode_in_pieces(Framing::ChunkSize, CHUNKED, &[first, second]).unwrap();
                assert_eq!(out, DECODED, "cut at {first} and {second}");
                assert!(done);
            }
        }
    }

    #[test]
    fn chunk_lines_may_end_with_a_bare_lf() {
        let (out, done) = decode_in_pieces(Framing::ChunkSize, b"3\nabc\n0\n\n", &[]).unwrap();
        assert_eq!(out, b"abc");
        assert!(done);
    }

    #[test]
    fn bad_chunk_framing_is_an_error_not_a_panic() {
        for wire in [
            &b"zz\r\nabc"[..],
            b"\r\n",
            b"fffffffffffffffff\r\n",
            b"3\r\nabcX\r\n",
        ] {
            assert!(
                matches!(
                    decode_in_pieces(Framing::ChunkSize, wire, &[]),
                    Err(DirectError::Protocol(_))
                ),
                "{wire:?}"
            );
        }
        let long = vec![b'1'; MAX_LINE_BYTES + 1];
        assert!(decode_in_pieces(Framing::ChunkSize, &long, &[]).is_err());
    }

    #[test]
    fn a_length_body_ends_at_its_length_and_a_close_body_takes_everything() {
        let (out, done) = decode_in_pieces(Framing::Length(5), b"hello world", &[2]).unwrap();
        assert_eq!((out.as_slice(), done), (&b"hello"[..], true));
        let (out, done) = decode_in_pieces(Framing::UntilClose, b"hello world", &[3]).unwrap();
        assert_eq!((out.as_slice(), done), (&b"hello world"[..], false));
    }

    #[test]
    fn framing_follows_the_head() {
        let head = |lines: &str| {
            let raw = format!("HTTP/1.1 200 OK\r\n{lines}\r\n");
            parse_head(raw.as_bytes()).unwrap().unwrap().0.headers
        };
        assert_eq!(
            Framing::of(&head("Transfer-Encoding: chunked\r\n")).unwrap(),
            Framing::ChunkSize
        );
        assert_eq!(
            Framing::of(&head("Content-Length: 7\r\n")).unwrap(),
            Framing::Length(7)
        );
        assert_eq!(
            Framing::of(&head("Content-Length: 0\r\n")).unwrap(),
            Framing::Done
        );
        assert_eq!(Framing::of(&head("")).unwrap(), Framing::UntilClose);
        assert!(Framing::of(&head("Content-Length: 1\r\nContent-Length: 2\r\n")).is_err());
        assert!(Framing::of(&head("Content-Length: x\r\n")).is_err());
    }

    #[test]
    fn heads_are_read_whole_or_refused() {
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Ty")
                .unwrap()
                .is_none()
        );
        let (head, used) = parse_head(b"HTTP/1.1 404 Not Found\r\nA: b\r\n\r\nrest")
            .unwrap()
            .unwrap();
        assert_eq!((head.status, used), (StatusCode::NOT_FOUND, 32));
        assert!(parse_head(b"NOT HTTP\r\n\r\n").is_err());
        let many: String = (0..=MAX_HEADERS).map(|i| format!("h{i}: v\r\n")).collect();
        assert!(parse_head(format!("HTTP/1.1 200 OK\r\n{many}\r\n").as_bytes()).is_err());
    }

    #[test]
    fn the_request_carries_its_headers_and_the_gateways_own_framing() {
        let client = reqwest::Client::new();
        let request = client
            .post("http://agent.test:8080/rpc?x=1")
            .header("authorization", "Bearer t")
            .header("content-length", "999")
            .header("connection", "keep-alive")
            .body("{}")
            .build()
            .unwrap();
        assert!(serves(&request));
        let text = String::from_utf8(request_bytes(&request)).unwrap();
        assert_eq!(
            text,
            "POST /rpc?x=1 HTTP/1.1\r\nhost: agent.test:8080\r\nauthorization: Bearer t\r\naccept: */*\r\ncontent-length: 2\r\n\r\n{}"
        );
        let https = client
            .post("https://agent.test/")
            .body("{}")
            .build()
            .unwrap();
        assert!(!serves(&https));
    }
}
