//! Issue 37, the edge: SIGTERM keeps to the grace with no hidden seconds
//! (streams held open, an idle HTTP/2 connection, a half-done TLS
//! handshake), and HTTP/2 request bodies in flight are bounded per
//! connection, the memory they held given back.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::edge_tls::{h2_connect, h2_request};
use crate::support::*;

/// Waits (bounded, without blocking the test's runtime: the fake agent
/// runs on it) for the gateway to exit; how long after `since` it did.
async fn exited_after(gw: &mut Process, since: Instant, limit: Duration) -> Duration {
    loop {
        if let Ok(Some(_)) = gw.child.try_wait() {
            return since.elapsed();
        }
        assert!(since.elapsed() < limit, "still running after {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// SIGTERM, and when it was sent.
fn terminate(gw: &Process) -> Instant {
    let sent = Instant::now();
    gw.terminate();
    sent
}

/// A converted run of the fake agent's `scenario` on an HTTP/2 connection.
async fn h2_stream(
    client: &h2::client::SendRequest<Bytes>,
    port: u16,
    scenario: &str,
) -> h2::RecvStream {
    let mut client = client.clone().ready().await.unwrap();
    let request = h2_request(port, "http", scenario);
    let (response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(Bytes::from_static(crate::SEED_BODY.as_bytes()), true)
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    response.into_body()
}

/// Reads an HTTP/2 stream to its end in the background; its text.
fn read_h2(mut body: h2::RecvStream) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let mut text = String::new();
        while let Some(Ok(chunk)) = body.data().await {
            let _ = body.flow_control().release_capacity(chunk.len());
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    })
}

#[tokio::test]
async fn sigterm_with_streams_held_open_exits_within_the_grace_plus_one_second() {
    let (addr, _fake) = fake_upstream().await;
    let mut gw = gateway_for(&format!("http://{addr}/"), &["--shutdown-grace-secs", "2"]);
    // A slow agent (an event every 200 ms for 30 s) behind three streams:
    // read over HTTP/1.1, read over HTTP/2, and one whose HTTP/2 client
    // stopped reading after 1 KiB (its window never given back).
    let h1 = crate::fake_run(&gw, "endless").await;
    let h1 = tokio::spawn(async move { h1.text().await.unwrap_or_default() });
    let (reading, _reading_connection) = h2_connect(gw.port, 65_535).await;
    let h2_read = read_h2(h2_stream(&reading, gw.port, "endless").await);
    let (stalled, _stalled_connection) = h2_connect(gw.port, 1024).await;
    let _held = h2_stream(&stalled, gw.port, "endless").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let sent = terminate(&gw);
    let took = exited_after(&mut gw, sent, Duration::from_secs(15)).await;
    eprintln!("edge: grace 2 s, three streams held open: exited {took:?} after SIGTERM");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(3),
        "exited {took:?} after SIGTERM (grace 2 s)"
    );
    // The streams that were read ended as before: RUN_ERROR at the grace.
    for text in [h1.await.unwrap(), h2_read.await.unwrap()] {
        let events = agui_events(&text);
        let last = assert_valid_run(&events);
        assert_eq!(last["code"], "GATEWAY_SHUTTING_DOWN", "{text}");
    }
}

#[tokio::test]
async fn an_idle_gateway_exits_within_a_second_with_idle_http2_and_half_done_handshakes() {
    let (addr, _fake) = fake_upstream().await;
    let mut gw = gateway_for(&format!("http://{addr}/"), &[]);
    // An HTTP/2 connection that ran a stream and is idle now (its client
    // answers pings), another that sent the preface and nothing more, one
    // that sent half of it, and a silent one.
    let (client, _connection) = h2_connect(gw.port, 65_535).await;
    let text = read_h2(h2_stream(&client, gw.port, "fixed").await)
        .await
        .unwrap();
    assert!(text.contains("RUN_FINISHED"), "{text}");
    let opened = half_open(
        gw.port,
        &[
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"PRI * HTTP/2.0\r\n",
            b"",
        ],
    )
    .await;
    exits_within_a_second(
        &mut gw,
        "an idle HTTP/2 connection and three half-open ones",
    )
    .await;

    // Over TLS: a client that opened TCP and sent nothing, one that sent a
    // record header and part of a ClientHello, and an idle HTTP/2
    // connection that reqwest keeps in its pool.
    let mut tls = tls_demo();
    let url = format!("https://127.0.0.1:{}/healthz", tls.port);
    let pooled = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .http2_prior_knowledge()
        .no_proxy()
        .build()
        .unwrap();
    let health = pooled.get(&url).send().await.unwrap();
    assert_eq!(health.version(), reqwest::Version::HTTP_2);
    assert_eq!(health.status(), 200);
    let handshakes = half_open(
        tls.port,
        &[b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"],
    )
    .await;
    exits_within_a_second(&mut tls, "TLS: idle HTTP/2 and two unfinished handshakes").await;
    drop((pooled, opened, handshakes));
}

/// A connection per opening, each sending those bytes and no more.
async fn half_open(port: u16, openings: &[&[u8]]) -> Vec<TcpStream> {
    let at: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut streams = Vec::new();
    for opening in openings {
        let mut stream = TcpStream::connect(at).await.unwrap();
        stream.write_all(opening).await.unwrap();
        streams.push(stream);
    }
    streams
}

/// SIGTERM to a gateway with nothing in flight (once the connections just
/// opened are in), which must be gone within a second.
async fn exits_within_a_second(gw: &mut Process, open: &str) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = terminate(gw);
    let took = exited_after(gw, sent, Duration::from_secs(15)).await;
    eprintln!("edge: idle, {open}: exited {took:?} after SIGTERM");
    assert!(
        took < Duration::from_secs(1),
        "{open}: exited {took:?} after SIGTERM"
    );
}

/// `agui-gateway demo --tls`: its own agent, a certificate made at start.
fn tls_demo() -> Process {
    let mut command = std::process::Command::new(gateway_binary());
    command
        .args(["demo", "--tls", "--listen", "127.0.0.1:0"])
        .env("AGUI_GATEWAY_LOG", "warn")
        .stderr(std::process::Stdio::inherit());
    start_reporting(
        command,
        "listening on ",
        "the TLS demo",
        Duration::from_secs(30),
    )
}
