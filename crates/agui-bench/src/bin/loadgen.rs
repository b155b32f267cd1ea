//! Opens N concurrent streams and measures them: time to first content
//! event (the first carrying an upstream send time: setups differ in what
//! they send before it), added
//! latency per event (the upstream's send time, carried in the event, to
//! receipt here), events per second, errors, and the proxy's RSS and CPU.
//! Bounded in count (`--streams`) and time (`--timeout-secs`).
//!
//! `loadgen --url URL --mode agui|a2a --streams N --setup NAME [--pid PID]
//!          [--message 'events=50 interval=20'] [--ramp-per-sec 2000]
//!          [--protocol http1|http2 [--streams-per-connection 100]] [--ca-file PEM]`
//! prints one JSON object (the `runs[]` entry of `bench/plot.py`).
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use a2a_agui::SseParser;
use a2a_fake_agent::marker::{markers, now_micros};
use clap::Parser;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Mutex;

#[derive(Debug, Parser)]
struct Args {
    /// The endpoint to load.
    #[arg(long)]
    url: String,
    /// `agui`: POST a RunAgentInput; `a2a`: POST a JSON-RPC message/stream.
    #[arg(long, default_value = "agui")]
    mode: String,
    /// Concurrent streams.
    #[arg(long, default_value_t = 100)]
    streams: usize,
    /// How many streams to open per second while ramping up.
    #[arg(long, default_value_t = 2000)]
    ramp_per_sec: u64,
    /// The user text: the fake upstream reads `events=`, `interval=`, `hold=`.
    #[arg(long, default_value = "events=50 interval=20")]
    message: String,
    /// The proxy's process ids (repeat for several, e.g. nginx's master
    /// and worker), to sample their summed RSS and CPU time.
    #[arg(long)]
    pid: Vec<u32>,
    /// A label for the result.
    #[arg(long, default_value = "unnamed")]
    setup: String,
    /// Give up (and count unfinished streams as errors) after this long.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// `http1`: one connection per stream; `http2`: HTTP/2 (ALPN over
    /// https, prior knowledge over http), `--streams-per-connection` streams
    /// sharing each connection.
    #[arg(long, value_enum, default_value_t = Protocol::Http1)]
    protocol: Protocol,
    /// HTTP/2 streams per connection (a browser's tab shares one; the
    /// gateway and nginx take at most 100 and 128).
    #[arg(long, default_value_t = 100)]
    streams_per_connection: usize,
    /// A PEM CA to trust for https URLs (the setups' own).
    #[arg(long)]
    ca_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Protocol {
    Http1,
    Http2,
}

/// The clients the streams use: one per HTTP/2 connection (reqwest puts
/// every request to a host on one), one in all for HTTP/1.1 (a pool of
/// one connection per stream).
fn clients(args: &Args) -> anyhow::Result<Vec<reqwest::Client>> {
    let roots = match &args.ca_file {
        Some(path) => vec![reqwest::Certificate::from_pem(&std::fs::read(path)?)?],
        None => Vec::new(),
    };
    let build = || -> anyhow::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder().no_proxy().tcp_nodelay(true);
        // HTTP/1.1: a fresh connection per stream. HTTP/2 keeps the pool
        // on, which is what lets every request to the host share one
        // connection (without it hyper opens one per request).
        if matches!(args.protocol, Protocol::Http1) {
            builder = builder.pool_max_idle_per_host(0);
        }
        if !roots.is_empty() {
            builder = builder.tls_certs_only(roots.clone());
        }
        builder = match args.protocol {
            Protocol::Http1 => builder.http1_only(),
            Protocol::Http2 if args.url.starts_with("http://") => builder.http2_prior_knowledge(),
            Protocol::Http2 => builder,
        };
        Ok(builder.build()?)
    };
    let count = match args.protocol {
        Protocol::Http1 => 1,
        Protocol::Http2 => args
            .streams
            .div_ceil(args.streams_per_connection.max(1))
            .max(1),
    };
    (0..count).map(|_| build()).collect()
}

#[derive(Default)]
struct Totals {
    ttfe_us: Vec<u64>,
    latency_us: Vec<u64>,
    ok: u64,
    errors: u64,
}

/// Thread and message ids are new for every loadgen process: the gateway
/// remembers what each thread already sent (issue 10) and refuses a run
/// with nothing new, so a second run on the same gateway must not repeat
/// the first's ids.
fn run_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{:x}-{}", nanos, std::process::id())
    })
}

fn body(mode: &str, message: &str, n: usize) -> Value {
    let prefix = run_prefix();
    if mode == "a2a" {
        json!({ "jsonrpc": "2.0", "id": n, "method": "message/stream", "params": { "message":
            { "kind": "message", "role": "user", "messageId": format!("m{n}"), "parts": [{ "kind": "text", "text": message }] } } })
    } else {
        json!({ "threadId": format!("thread-{prefix}-{n}"), "runId": format!("run-{n}"), "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{ "id": format!("u-{prefix}-{n}"), "role": "user", "content": message }] })
    }
}

/// One stream, read to its end; returns (time to first event, latencies).
async fn one_stream(
    client: reqwest::Client,
    url: String,
    payload: Value,
    all_open: Arc<AtomicU64>,
    want_http2: bool,
) -> Result<(u64, Vec<u64>), String> {
    let started = Instant::now();
    let response = client
        .post(&url)
        .header("Accept", "text/event-stream")
        .json(&payload)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    if want_http2 && response.version() != reqwest::Version::HTTP_2 {
        return Err(format!("{:?}, not HTTP/2", response.version()));
    }
    all_open.fetch_add(1, Ordering::Relaxed);
    let mut parser = SseParser::default();
    let mut ttfe = None;
    let mut latencies = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        let received = now_micros();
        let before = latencies.len();
        parser
            .feed(&chunk, |event| {
                for sent in markers(event.data) {
                    latencies.push(received.saturating_sub(sent));
                }
            })
            .map_err(|e| e.to_string())?;
        if latencies.len() > before && ttfe.is_none() {
            ttfe = Some(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
        }
    }
    ttfe.map(|t| (t, latencies))
        .ok_or_else(|| "no content event".to_owned())
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

fn summary(values: &mut [u64]) -> Value {
    values.sort_unstable();
    json!({ "p50": percentile(values, 50.0), "p90": percentile(values, 90.0), "p99": percentile(values, 99.0),
        "max": values.last().map_or(0.0, |v| *v as f64 / 1000.0) })
}

/// Summed (RSS in KiB, CPU seconds) of the processes; `None` without any.
fn sample_all(pids: &[u32]) -> Option<(u64, f64)> {
    if pids.is_empty() {
        return None;
    }
    pids.iter()
        .map(|pid| sample(*pid))
        .try_fold((0, 0.0), |(rss, cpu), s| s.map(|(r, c)| (rss + r, cpu + c)))
}

/// (RSS in KiB, CPU seconds) of a process, from /proc.
fn sample(pid: u32) -> Option<(u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): utime, stime are 14 and 15.
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some((rss, ticks / 100.0))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let clients = clients(&args)?;
    let per_connection = args.streams_per_connection.max(1);
    let want_http2 = matches!(args.protocol, Protocol::Http2);
    if want_http2 {
        // One request on each client first: its connection is made and
        // known to be HTTP/2 before the streams start, so they share it
        // (concurrent first requests over TLS would each open one, not
        // knowing yet what ALPN will say).
        for client in &clients {
            let warm = client.get(&args.url).send().await;
            if let Err(err) = warm {
                anyhow::bail!("warming up a connection: {err}");
            }
        }
    }
    let totals = Arc::new(Mutex::new(Totals::default()));
    let all_open = Arc::new(AtomicU64::new(0));
    let before = sample_all(&args.pid);
    let peak_rss = Arc::new(AtomicU64::new(before.map_or(0, |s| s.0)));
    let done = Arc::new(AtomicBool::new(false));
    if !args.pid.is_empty() {
        let (peak, done, pids) = (peak_rss.clone(), done.clone(), args.pid.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                if let Some((rss, _)) = sample_all(&pids) {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }
    let started = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / args.ramp_per_sec.max(1) as f64);
    let mut tasks = Vec::with_capacity(args.streams);
    for n in 0..args.streams {
        let client = match args.protocol {
            Protocol::Http1 => &clients[0],
            Protocol::Http2 => &clients[(n / per_connection).min(clients.len() - 1)],
        };
        let (client, url, totals, all_open) = (
            client.clone(),
            args.url.clone(),
            totals.clone(),
            all_open.clone(),
        );
        let payload = body(&args.mode, &args.message, n);
        tasks.push(tokio::spawn(async move {
            let outcome = one_stream(client, url, payload, all_open, want_http2).await;
            let mut totals = totals.lock().await;
            match outcome {
                Ok((ttfe, latencies)) => {
                    totals.ok += 1;
                    totals.ttfe_us.push(ttfe);
                    totals.latency_us.extend(latencies);
                }
                Err(err) => {
                    if totals.errors < 3 {
                        eprintln!("stream error: {err}");
                    }
                    totals.errors += 1;
                }
            }
        }));
        tokio::time::sleep(gap).await;
    }
    let deadline = Duration::from_secs(args.timeout_secs);
    let unfinished =
        match tokio::time::timeout(deadline, futures::future::join_all(&mut tasks)).await {
            Ok(_) => 0,
            Err(_) => {
                let running = tasks.iter().filter(|t| !t.is_finished()).count();
                for task in &tasks {
                    task.abort();
                }
                running as u64
            }
        };
    let duration = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let after = sample_all(&args.pid);
    let mut totals = totals.lock().await;
    let events = totals.latency_us.len() as u64;
    let peak = peak_rss.load(Ordering::Relaxed);
    let baseline_rss = before.map_or(0, |b| b.0);
    let result = json!({
        "setup": args.setup,
        "protocol": format!("{:?}", args.protocol).to_lowercase(),
        "connections": if want_http2 { clients.len() } else { args.streams },
        "concurrency": args.streams,
        "streams_ok": totals.ok,
        "errors": totals.errors + unfinished,
        "events": events,
        "duration_s": duration,
        "events_per_s": events as f64 / duration,
        "ttfe_ms": summary(&mut totals.ttfe_us),
        "added_latency_ms": summary(&mut totals.latency_us),
        "proxy_rss_kib": before.map(|_| peak),
        "proxy_rss_per_stream_kib": before.map(|_| peak.saturating_sub(baseline_rss) as f64 / args.streams.max(1) as f64),
        "proxy_cpu_s": match (before, after) { (Some(b), Some(a)) => Some(a.1 - b.1), _ => None },
    });
    println!("{result}");
    Ok(())
}
