//! Converted streams read their upstream on a connection of the relay's
//! own (`lean`): every HTTP/1.1 body framing an agent may send, cut at
//! awkward places, and framing errors that must end the run cleanly.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::resume::{post, run_input};
use crate::support::*;

/// How the raw upstream frames its SSE answer.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// Chunked, with a chunk extension, a trailer, and bare-LF lines,
    /// written a few bytes at a time.
    ChunkedTrickle,
    /// `Content-Length`.
    Length,
    /// Neither: the body ends when the connection closes (HTTP/1.0 style).
    UntilClose,
    /// Chunked, but the third chunk's size is not hex.
    BadChunk,
}

fn sse_body() -> Vec<u8> {
    let frame = |result: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({ "jsonrpc": "2.0", "id": 1, "result": result })
        )
    };
    let mut body = frame(
        json!({ "kind": "task", "id": "t1", "contextId": "c1", "status": { "state": "working" } }),
    );
    for i in 1..=5 {
        body += &frame(
            json!({ "kind": "artifact-update", "taskId": "t1", "contextId": "c1", "append": i > 1,
            "artifact": { "artifactId": "a", "parts": [{ "kind": "text", "text": format!("<{i}>") }] } }),
        );
    }
    body += &frame(
        json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "final": true, "status": { "state": "completed" } }),
    );
    body.into_bytes()
}

/// Reads one request: its head and `Content-Length` body, as text. `None`
/// on EOF.
async fn read_request(socket: &mut TcpStream) -> Option<String> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_string();
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let n = socket.read(&mut buffer).await.ok()?;
                if n == 0 {
                    return None;
                }
                data.extend_from_slice(&buffer[..n]);
            }
            return Some(String::from_utf8_lossy(&data).to_string());
        }
        let n = socket.read(&mut buffer).await.ok()?;
        if n == 0 || data.len() > 65_536 {
            return None;
        }
        data.extend_from_slice(&buffer[..n]);
    }
}

async fn answer(mut socket: TcpStream, addr: SocketAddr, framing: Framing) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    if request.starts_with("GET") {
        let card =
            json!({ "name": "raw", "description": "raw HTTP/1.1", "url": format!("http://{addr}/"),
            "protocolVersion": "0.3.0", "capabilities": { "streaming": true } })
            .to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{card}",
            card.len()
        );
        let _ = socket.write_all(reply.as_bytes()).await;
        return;
    }
    if !request.contains("message/stream") {
        // Re-attaching (resubscribe, get) is refused: the run ends.
        let refusal = json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32001, "message": "Task not found" } }).to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{refusal}",
            refusal.len()
        );
        let _ = socket.write_all(reply.as_bytes()).await;
        return;
    }
    let body = sse_body();
    let mut wire = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n".to_vec();
    match framing {
        Framing::ChunkedTrickle | Framing::BadChunk => {
            wire.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
            for (n, piece) in body.chunks(97).enumerate() {
                if matches!(framing, Framing::BadChunk) && n == 2 {
                    wire.extend_from_slice(b"zz\r\n");
                }
                wire.extend_from_slice(format!("{:x};ext=\"v\"\r\n", piece.len()).as_bytes());
                wire.extend_from_slice(piece);
                wire.extend_from_slice(if n % 2 == 0 { b"\r\n" } else { b"\n" });
            }
            wire.extend_from_slice(b"0\r\nx-checksum: 1\r\n\r\n");
        }
        Framing::Length => {
            wire.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
            wire.extend_from_slice(&body);
        }
        Framing::UntilClose => {
            wire.extend_from_slice(b"connection: close\r\n\r\n");
            wire.extend_from_slice(&body);
        }
    }
    // A few bytes at a time: heads, chunk lines and data all cut apart.
    for piece in wire.chunks(13) {
        if socket.write_all(piece).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let _ = socket.shutdown().await;
}

async fn raw_upstream(framing: Framing) -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        // Bounded: the test makes a handful of calls.
        for _ in 0..16 {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(answer(socket, addr, framing));
        }
    });
    addr
}

#[tokio::test]
async fn every_body_framing_is_read_whole_and_a_bad_one_ends_the_run() {
    for framing in [
        Framing::ChunkedTrickle,
        Framing::Length,
        Framing::UntilClose,
        Framing::BadChunk,
    ] {
        let addr = raw_upstream(framing).await;
        let gw = gateway_for(&format!("http://{addr}/"), &[]);
        let url = format!("{}/agui", gw.url());
        let body = post(&url, &run_input("t", "hi"), None)
            .await
            .text()
            .await
            .unwrap();
        let events = agui_events(&body);
        let last = events.last().unwrap();
        if matches!(framing, Framing::BadChunk) {
            assert_eq!(last["type"], "RUN_ERROR", "{framing:?}: {body}");
            assert_eq!(last["code"], "UPSTREAM_READ_ERROR", "{framing:?}");
            assert_eq!(
                events.iter().filter(|e| e["type"] == "RUN_ERROR").count(),
                1
            );
        } else {
            assert_valid_run(&events);
            assert_eq!(text_of(&events), "<1><2><3><4><5>", "{framing:?}");
            assert_eq!(last["type"], "RUN_FINISHED", "{framing:?}");
        }
    }
}
