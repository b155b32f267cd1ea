//! TLS and HTTP/2 at the edge (issue 29): the gateway started with
//! `--tls-cert`/`--tls-key` (certificates made here with rcgen) serves a
//! run to curl over HTTP/2 and HTTP/1.1 (ALPN), and without TLS to an
//! HTTP/2 client by prior knowledge; its card names `https`; a bad file is
//! refused at start with its name; rotated files are served to new
//! handshakes; stalled handshakes and prefaces are cut by the header-read
//! timeout; and over HTTP/2 a stream's disconnect, or a client that stops
//! reading one stream, ends that stream's upstream call as over HTTP/1.1.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::limits::closed_within;
use crate::support::*;

/// A CA and a server certificate for 127.0.0.1 and localhost it signed,
/// as PEM files in a fresh folder.
struct Certs {
    dir: PathBuf,
}

impl Certs {
    fn new(name: &str) -> Certs {
        let dir = std::env::temp_dir().join(format!(
            "agui-gateway-edge-tls-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let certs = Certs { dir };
        certs.issue("a");
        certs
    }

    /// A CA named `ca` and its server pair: `ca-<ca>.pem`, and the pair
    /// the gateway serves, `server.pem`/`server.key` (replaced).
    fn issue(&self, ca_name: &str) {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name
            .push(DnType::CommonName, format!("edge test CA {ca_name}"));
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        std::fs::write(self.path(&format!("ca-{ca_name}.pem")), ca_cert.pem()).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let mut leaf =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, format!("edge server of {ca_name}"));
        let key = KeyPair::generate().unwrap();
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        // The key first: a watcher that sees the new certificate with the
        // old key would (rightly) refuse the pair until the key follows.
        std::fs::write(self.path("server.key.new"), key.serialize_pem()).unwrap();
        std::fs::write(self.path("server.pem.new"), cert.pem()).unwrap();
        std::fs::rename(self.path("server.key.new"), self.path("server.key")).unwrap();
        std::fs::rename(self.path("server.pem.new"), self.path("server.pem")).unwrap();
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    fn flags(&self) -> Vec<String> {
        vec![
            "--tls-cert".to_owned(),
            self.path("server.pem").display().to_string(),
            "--tls-key".to_owned(),
            self.path("server.key").display().to_string(),
        ]
    }

    /// A client trusting only CA `ca_name`.
    fn client(&self, ca_name: &str) -> reqwest::Client {
        let pem = std::fs::read(self.path(&format!("ca-{ca_name}.pem"))).unwrap();
        reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
            .timeout(Duration::from_secs(30))
            .no_proxy()
            .build()
            .unwrap()
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tls_gateway(upstream: &str, certs: &Certs, extra: &[&str]) -> Process {
    let flags = certs.flags();
    let mut args: Vec<&str> = vec!["--upstream", upstream];
    args.extend(flags.iter().map(String::as_str));
    args.extend_from_slice(extra);
    gateway(&args)
}

const AGUI_BODY: &str = r#"{"threadId": "t-edge", "runId": "r-edge", "messages": [{"id": "u1", "role": "user", "content": "Hello"}]}"#;

/// curl's run to `url` with `protocol` (`--http2`, `--http1.1`,
/// `--http2-prior-knowledge`): the body and the HTTP version it used.
/// (Async: the fake upstream runs on the test's one thread.)
async fn curl_run(url: &str, protocol: &str, ca: Option<&Path>, thread: &str) -> (String, String) {
    let body = AGUI_BODY.replace("t-edge", thread);
    let mut command = tokio::process::Command::new("curl");
    command.args([
        "-sS",
        "-N",
        "--max-time",
        "30",
        protocol,
        "-X",
        "POST",
        "-H",
        "content-type: application/json",
        "-H",
        "accept: text/event-stream",
        "-d",
        &body,
        "-w",
        "\nHTTP_VERSION=%{http_version}\n",
        url,
    ]);
    if let Some(ca) = ca {
        command.arg("--cacert").arg(ca);
    }
    let output = command
        .stdin(Stdio::null())
        .output()
        .await
        .expect("curl runs (Debian's curl, with nghttp2)");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "curl {protocol} {url}: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (body, version) = text.rsplit_once("\nHTTP_VERSION=").unwrap();
    (body.to_owned(), version.trim().to_owned())
}

#[tokio::test]
#[ignore = "tier 2: curl"]
async fn curl_streams_a_run_over_http2_and_http1_with_tls_and_by_prior_knowledge() {
    let (addr, _fake) = fake_upstream().await;
    let upstream = format!("http://{addr}/");
    let certs = Certs::new("curl");
    let tls = tls_gateway(&upstream, &certs, &[]);
    let ca = certs.path("ca-a.pem");
    let base = format!("https://localhost:{}", tls.port);
    for (protocol, version, thread) in [("--http2", "2", "t-h2"), ("--http1.1", "1.1", "t-h1")] {
        let (body, used) = curl_run(&format!("{base}/agui"), protocol, Some(&ca), thread).await;
        assert_eq!(used, version, "{protocol} negotiated HTTP/{used}");
        let events = agui_events(&body);
        assert_valid_run(&events);
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{body}");
        assert!(!text_of(&events).is_empty(), "{body}");
    }
    // What a client reads of the gateway names the scheme it used.
    let card: Value = certs
        .client("a")
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["url"], format!("{base}/"), "{card}");

    // Clear text: HTTP/2 by prior knowledge, and HTTP/1.1, on one port.
    let clear = gateway_for(&upstream, &[]);
    let url = format!("{}/agui", clear.url());
    let (body, used) = curl_run(&url, "--http2-prior-knowledge", None, "t-h2c").await;
    assert_eq!(used, "2");
    assert_eq!(agui_events(&body).last().unwrap()["type"], "RUN_FINISHED");
    let (body, used) = curl_run(&url, "--http1.1", None, "t-h1c").await;
    assert_eq!(used, "1.1");
    assert_eq!(agui_events(&body).last().unwrap()["type"], "RUN_FINISHED");
}

/// The gateway's exit and standard error when started with `args`.
fn refused_start(args: &[&str]) -> String {
    let output = Command::new(gateway_binary())
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_bad_certificate_path_or_key_is_refused_at_start_with_its_name() {
    let certs = Certs::new("refused");
    let cert = certs.path("server.pem").display().to_string();
    let key = certs.path("server.key").display().to_string();
    let missing = certs.path("missing.pem").display().to_string();
    let up = ["--upstream", "http://127.0.0.1:9/"];

    let err = refused_start(&[&up[..], &["--tls-cert", &missing, "--tls-key", &key]].concat());
    assert!(err.contains(&format!("--tls-cert: {missing}")), "{err}");
    let err = refused_start(&[&up[..], &["--tls-cert", &cert, "--tls-key", &missing]].concat());
    assert!(err.contains(&format!("--tls-key: {missing}")), "{err}");
    // The certificate as its own key, and a key of another pair.
    let err = refused_start(&[&up[..], &["--tls-cert", &cert, "--tls-key", &cert]].concat());
    assert!(
        err.contains("--tls-key") && err.contains("no PKCS#8"),
        "{err}"
    );
    let other = KeyPair::generate().unwrap();
    std::fs::write(certs.path("other.key"), other.serialize_pem()).unwrap();
    let other = certs.path("other.key").display().to_string();
    let err = refused_start(&[&up[..], &["--tls-cert", &cert, "--tls-key", &other]].concat());
    assert!(err.contains("not the key of the certificate"), "{err}");
    // A key as the certificate.
    let err = refused_start(&[&up[..], &["--tls-cert", &key, "--tls-key", &key]].concat());
    assert!(
        err.contains("--tls-cert") && err.contains("no certificate"),
        "{err}"
    );
    // One without the other.
    let err = refused_start(&[&up[..], &["--tls-cert", &cert]].concat());
    assert!(err.contains("--tls-key"), "{err}");

    // The file's `[tls]`: check-config names the table's line.
    let config = certs.path("gw.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\n[tls]\ncert = {missing:?}\nkey = {key:?}\n[agents.a]\nupstream = \"http://127.0.0.1:9/\"\n"
        ),
    )
    .unwrap();
    let (ok, out) = check_config(&config);
    assert!(!ok, "{out}");
    assert!(out.contains("gw.toml:2: tls.cert: "), "{out}");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\n[tls]\ncert = {cert:?}\nkey = {key:?}\n[agents.a]\nupstream = \"http://127.0.0.1:9/\"\n"
        ),
    )
    .unwrap();
    let (ok, out) = check_config(&config);
    assert!(ok, "{out}");
}

#[tokio::test]
async fn rotated_files_are_served_to_new_handshakes() {
    let (addr, _fake) = fake_upstream().await;
    let certs = Certs::new("rotate");
    let gw = tls_gateway(&format!("http://{addr}/"), &certs, &[]);
    let url = format!("https://127.0.0.1:{}/healthz", gw.port);
    assert_eq!(
        certs.client("a").get(&url).send().await.unwrap().status(),
        200
    );
    certs.issue("b");
    // Looked at every 2 s: a fresh client (a new handshake) trusting only
    // the new CA gets through within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(response) = certs.client("b").get(&url).send().await {
            assert_eq!(response.status(), 200);
            break;
        }
        assert!(Instant::now() < deadline, "the new pair was never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        certs.client("a").get(&url).send().await.is_err(),
        "the old CA's pair is no longer served"
    );
}

#[tokio::test]
async fn stalled_handshakes_and_prefaces_are_cut_by_the_header_read_timeout() {
    let (addr, _fake) = fake_upstream().await;
    let upstream = format!("http://{addr}/");
    let certs = Certs::new("stall");
    let timeout = ["--header-read-timeout-secs", "2"];
    let tls = tls_gateway(&upstream, &certs, &timeout);
    let clear = gateway_for(&upstream, &timeout);
    let at = |port: u16| -> SocketAddr { format!("127.0.0.1:{port}").parse().unwrap() };
    // Silent, a TLS record header with no more, half the HTTP/2 preface,
    // and the whole preface with no SETTINGS after it: 20 of each.
    let cases: [(u16, &[u8]); 4] = [
        (tls.port, b""),
        (tls.port, b"\x16\x03\x01\x02\x00"),
        (clear.port, b"PRI * HTTP/2.0\r\n"),
        (clear.port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
    ];
    let mut tasks = Vec::new();
    for (port, opening) in cases {
        for _ in 0..20 {
            let addr = at(port);
            tasks.push(tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                stream.write_all(opening).await.unwrap();
                (
                    opening.len(),
                    closed_within(&mut stream, Duration::from_secs(10)).await,
                )
            }));
        }
    }
    let mut longest = Duration::ZERO;
    for task in tasks {
        let (sent, took) = task.await.unwrap();
        let took = took.unwrap_or_else(|| panic!("a connection that sent {sent} bytes stayed"));
        assert!(
            took < Duration::from_secs(6),
            "{sent} bytes: lived {took:?}"
        );
        longest = longest.max(took);
    }
    eprintln!(
        "edge: 80 stalled TLS handshakes and HTTP/2 prefaces closed, the last after {longest:?} (header-read timeout 2 s)"
    );
    // The gateways still serve.
    assert_eq!(
        certs
            .client("a")
            .get(format!("https://127.0.0.1:{}/healthz", tls.port))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        http_get(format!("{}/healthz", clear.url())).await.status(),
        200
    );
}

/// An HTTP/2 connection by prior knowledge whose stream windows are
/// `window` bytes, a run on it, and the connection's task (it ends when
/// the gateway closes the connection).
async fn h2_run(
    port: u16,
    window: u32,
    scenario: &str,
) -> (
    h2::client::SendRequest<Bytes>,
    h2::RecvStream,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
) {
    let (client, connection) = h2_connect(port, window).await;
    let mut client = client.ready().await.unwrap();
    let (response, mut send) = client
        .send_request(h2_request(port, "http", scenario), false)
        .unwrap();
    send.send_data(Bytes::from_static(crate::SEED_BODY.as_bytes()), true)
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    (client, response.into_body(), connection)
}

/// An HTTP/2 connection by prior knowledge whose stream windows are
/// `window` bytes, and its task.
pub(crate) async fn h2_connect(
    port: u16,
    window: u32,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
) {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    (client, tokio::spawn(connection))
}

pub(crate) fn h2_request(port: u16, scheme: &str, scenario: &str) -> axum::http::Request<()> {
    axum::http::Request::post(format!(
        "{scheme}://127.0.0.1:{port}/v1/agents/default/stream?format=agui"
    ))
    .header("x-fake", scenario)
    .body(())
    .unwrap()
}

/// The rest of a stream, as text.
async fn read_to_end(body: &mut h2::RecvStream) -> String {
    let mut text = String::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text
}

/// Waits until the fake saw its stream closed and a cancel.
async fn upstream_closed_and_cancelled(fake: &Fake, since: Instant, within: Duration) -> Duration {
    let deadline = since + within;
    let closed = loop {
        if let Some(closed) = fake.log.lock().unwrap().closed {
            break closed;
        }
        assert!(Instant::now() < deadline, "the upstream stream stayed open");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    fake.wait_for_method("tasks/cancel", Duration::from_secs(5))
        .await;
    closed.saturating_duration_since(since)
}

#[tokio::test]
async fn an_http2_stream_reset_closes_its_upstream_and_cancels() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--cancel-on-disconnect", "--detach-grace-secs", "0"],
    );
    let (client, mut body, _connection) = h2_run(gw.port, 65_535, "endless").await;
    let first = body.data().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("RUN_STARTED"));
    // RST_STREAM (CANCEL) on this stream alone; the connection stays.
    drop(body);
    let reset = Instant::now();
    let lag = upstream_closed_and_cancelled(&fake, reset, Duration::from_secs(5)).await;
    assert!(
        lag < Duration::from_secs(1),
        "upstream closed {lag:?} after the reset"
    );
    drop(client);
}

#[tokio::test]
async fn an_http2_client_that_stops_reading_a_stream_loses_it_after_the_write_timeout() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &[
            "--cancel-on-disconnect",
            "--detach-grace-secs",
            "0",
            "--write-timeout-secs",
            "2",
        ],
    );
    // A 1 KiB window that is never given back: after a few events the
    // gateway has nowhere to write this stream, though the socket and the
    // connection are fine (pings are answered).
    let started = Instant::now();
    let (client, body, _connection) = h2_run(gw.port, 1024, "endless").await;
    let lag = upstream_closed_and_cancelled(&fake, started, Duration::from_secs(15)).await;
    eprintln!("edge: an HTTP/2 stream not read any more ended its upstream call after {lag:?}");
    // The endless run would last 30 s; the stall (about 1 KiB of events,
    // 2 s or so) plus the write timeout (2 s) end it.
    assert!(lag < Duration::from_secs(10), "{lag:?}");
    drop(body);
    drop(client);
}

#[tokio::test]
async fn a_draining_gateway_sends_http2_clients_a_goaway_and_their_streams_finish() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &["--shutdown-grace-secs", "20"]);
    // Eight events 200 ms apart.
    let (client, mut body, _connection) = h2_run(gw.port, 65_535, "drip").await;
    let first = body.data().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("RUN_STARTED"));
    gw.terminate();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Over HTTP/1.1 the drain's 503 says `Connection: close`, which HTTP/2
    // has no word for: its GOAWAY is what sends the next stream elsewhere.
    let second = async {
        let mut client = client.ready().await?;
        let (response, _) = client.send_request(h2_request(gw.port, "http", "fixed"), true)?;
        response.await
    }
    .await;
    assert!(
        second.is_err(),
        "a stream opened after the drain began was taken: {:?}",
        second.map(|response| response.status())
    );
    let rest = read_to_end(&mut body).await;
    assert!(
        rest.contains("RUN_FINISHED"),
        "the open stream finished:\n{rest}"
    );
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_after_the_header_read_timeout() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--header-read-timeout-secs", "2"],
    );
    let (client, mut body, connection) = h2_run(gw.port, 65_535, "fixed").await;
    let answer = read_to_end(&mut body).await;
    assert!(answer.contains("RUN_FINISHED"), "{answer}");
    let idle = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(8), connection).await;
    assert!(closed.is_ok(), "the idle connection stayed open");
    let after = idle.elapsed();
    assert!(
        after >= Duration::from_secs(1) && after < Duration::from_secs(6),
        "closed {after:?} after its last stream (header-read timeout 2 s)"
    );
    drop(client);
}

#[tokio::test]
async fn agents_are_told_the_connections_scheme_never_the_clients() {
    let (addr, fake) = fake_upstream().await;
    let upstream = format!("http://{addr}/");
    let certs = Certs::new("scheme");
    // Loopback is not a trusted proxy here: the caller's word counts for
    // nothing.
    let untrusted = ["--trusted-proxies", "192.0.2.1/32"];
    let clear = gateway_for(&upstream, &untrusted);
    let told = || {
        fake.log
            .lock()
            .unwrap()
            .headers
            .iter()
            .find(|(name, _)| name == "x-forwarded-proto")
            .map(|(_, value)| value.clone())
    };
    // An absolute-form https target over clear HTTP/1.1.
    let body = crate::SEED_BODY;
    let port = clear.port;
    let request = format!(
        "POST https://127.0.0.1:{port}/v1/agents/default/stream?format=agui HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let at: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let (status, _, answer) = crate::edge::raw(at, &request).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(told().as_deref(), Some("http"));
    // An HTTP/2 `:scheme: https` over clear text.
    let tcp = TcpStream::connect(at).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let (response, mut send) = client
        .send_request(h2_request(port, "https", "fixed"), false)
        .unwrap();
    send.send_data(Bytes::from_static(body.as_bytes()), true)
        .unwrap();
    let mut stream = response.await.unwrap().into_body();
    read_to_end(&mut stream).await;
    assert_eq!(told().as_deref(), Some("http"));
    // Over TLS: https.
    let tls = tls_gateway(&upstream, &certs, &untrusted);
    let answer = certs
        .client("a")
        .post(format!(
            "https://127.0.0.1:{}/v1/agents/default/stream?format=agui",
            tls.port
        ))
        .body(body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(answer.contains("RUN_FINISHED"), "{answer}");
    assert_eq!(told().as_deref(), Some("https"));
}
