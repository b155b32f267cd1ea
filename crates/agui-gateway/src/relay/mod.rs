//! Relaying one upstream response to the client as an AG-UI event stream.
//!
//! The response body is a stream that, on each poll, waits for the next
//! upstream chunk, the keep-alive timer, the idle timeout or shutdown,
//! whichever comes first, and hands out what the converter wrote, after
//! appending it to the run's journal. When the client goes away before the
//! end, hyper drops the body: with a journal the run detaches (a pump task
//! reads on into the journal for `detach_grace_secs`, for a reconnect),
//! else the upstream response is dropped, which closes its connection.

mod batch;
mod detach;
mod frames;
mod heal;
mod observe;
mod redis_run;
mod takeover;

pub use takeover::take_over;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use a2a_agui::{ErrorCode, Event, Options, OutputFormat, PollMemo, SequentialIds, StreamConverter};
use agui_journal::redis::RunSpec;
use agui_journal::{InputOp, RunIdentity, RunLog};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;

use self::detach::Attached;
use self::observe::RunObserver;
use self::redis_run::RedisRun;
use crate::obs::access::AccessNote;
use crate::obs::metrics::Metrics;
use crate::random::random_u64;
use crate::state::{AppState, Shutdown, StreamsFull};
use crate::upstream::Call;
use crate::upstream::call::Called;
use crate::upstream::outbound::Forwarded;
use crate::upstream::run::{RunAnswer, RunCalled};
use crate::upstream::{Agent, TaskCall, UpstreamBody, UpstreamError};

/// Called once with the terminal event and the run's A2A task id.
pub type OnEnd = Box<dyn FnOnce(&Event, Option<&str>) + Send>;

/// Called once with the run's total tokens.
pub type OnUsage = Box<dyn FnOnce(u64) + Send>;

/// What a converted stream makes of the upstream's answer.
pub struct Conversion {
    pub options: Options,
    pub format: OutputFormat,
    /// Called with the terminal event (and the task id) when the run ends.
    pub on_end: Option<OnEnd>,
    /// Called once the agent took the call's input: it named a task or a
    /// context (an error answer names neither).
    pub on_delivered: Option<Box<dyn FnOnce() + Send>>,
    /// Called once when the run ends, with its `totalTokens` (input plus
    /// output), when the agent reported usage: what a budget counts.
    pub on_usage: Option<OnUsage>,
    /// The request's access-log notes (events, the `RUN_ERROR` code).
    pub access: Option<AccessNote>,
    /// Write each upstream event too (`event: a2a`), for the inspector.
    pub tap: bool,
}

/// Opens a converted stream: takes a place under `max_streams`, then makes
/// the upstream call (so a busy gateway answers 503 before looking up the
/// agent's card) and relays its answer.
pub async fn open(
    state: &AppState,
    agent: Arc<Agent>,
    forwarded: Forwarded,
    call: impl Future<Output = RunCalled>,
    conversion: Conversion,
    identity: RunIdentity,
) -> Result<Response, StreamsFull> {
    let permit = state.stream_permit(agent.name())?;
    let started = Instant::now();
    let RunCalled {
        answer: upstream,
        span,
    } = call.await;
    // Its first digit is its thread's shard (a Redis Cluster's journal
    // keeps a run with its thread).
    let thread = identity.thread.as_ref().map(|thread| &thread.thread);
    let key = agui_journal::redis::run_key(random_u64(), thread);
    // A random tag per run: ids never repeat across the runs of a thread.
    let tag = format!("{:012x}", random_u64() >> 16);
    let shared = match &state.redis {
        Some(journal) => {
            let spec = RunSpec {
                agent: agent.name().to_owned(),
                thread_id: conversion.options.thread_id.clone(),
                run_id: conversion.options.run_id.clone(),
                interrupts: conversion.options.interrupts,
                v1: conversion.options.version == a2a_agui::AguiVersion::V1,
                client_tools: conversion.options.client_tools.clone(),
                state: conversion.options.state.clone(),
                format: conversion.format.as_str().to_owned(),
                id_tag: tag.clone(),
                headers: forwarded.for_journal(&agent),
                poll: match &upstream {
                    Ok(RunAnswer::Polled { memo, .. }) => serde_json::to_value(memo).ok(),
                    _ => None,
                },
            };
            let limit = 2 * state.config.journal.limits.max_run_bytes;
            RedisRun::open(journal.clone(), &key, &identity, &spec, limit).await
        }
        None => None,
    };
    let run = Run {
        agent,
        forwarded,
        conversion,
        keepalive: state.config.keepalive,
        max_event_bytes: state.config.limits.max_event_bytes,
        shutdown: state.shutdown.clone(),
        metrics: state.metrics.clone(),
        log: state
            .journal
            .as_ref()
            .map(|journal| journal.open(key.clone(), identity)),
        detach_grace: state.config.journal.detach_grace,
        permit,
    };
    let mut stream = StreamConverter::new(
        run.conversion.options.clone(),
        SequentialIds::tagged(tag),
        run.conversion.format,
        run.max_event_bytes,
    )
    // Every frame names the run and its place in it (SSE `id:`).
    .with_event_ids(key);
    if run.conversion.tap {
        stream = stream.with_tap();
    }
    let mut state = RelayState::new(run, stream, Source::Done, shared);
    state.observer.call_span = span;
    Ok(relay(state, upstream, started))
}

/// Everything one relayed run needs besides the upstream response.
struct Run {
    agent: Arc<Agent>,
    /// The client's headers as the policy forwards them: the cancel after
    /// a disconnect carries them too.
    forwarded: Forwarded,
    conversion: Conversion,
    keepalive: Duration,
    max_event_bytes: usize,
    shutdown: Shutdown,
    metrics: Arc<Metrics>,
    /// Where every frame goes before the client gets it (none when the
    /// journal is off).
    log: Option<Arc<RunLog>>,
    detach_grace: Duration,
    /// This stream's place under `max_streams`, released when it ends
    /// (a detached run keeps it).
    #[expect(dead_code, reason = "held for its Drop, which frees the place")]
    permit: OwnedSemaphorePermit,
}

enum Source {
    /// `text/event-stream`: chunks go through the SSE parser.
    Events(UpstreamBody),
    /// A polled task's news: one JSON document per item.
    Items(UpstreamBody),
    /// A stream another replica read until it died: re-attach first.
    Lost,
    /// Anything else: a whole body to read as JSON.
    Document(UpstreamBody, Vec<u8>),
    /// Nothing more to read.
    Done,
}

/// How the upstream stream stopped before the run's end.
enum Broke {
    /// It ended (a document body ends here too).
    Ended,
    /// Reading it failed.
    ReadError,
    /// Another replica held it and went away (a takeover).
    Lost,
}

/// The largest encode buffer a worker thread keeps between steps.
const SCRATCH_KEPT: usize = 64 * 1024;
/// How long a client's stop waits for the agent to take its cancel before
/// the run ends anyway (the cancel goes on).
const CANCEL_WAIT: Duration = Duration::from_millis(500);

thread_local! {
    /// Where a step's frames are encoded before they leave as one
    /// exact-size piece. A buffer grown from empty per step reallocates
    /// several times per event; one per stream would stay with every held
    /// stream (about 1 KiB each). One per worker thread has neither cost.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The thread's encode buffer, empty. A step that waits while holding it
/// (`next_batch`) leaves the next one a fresh buffer: correct, just
/// slower.
fn take_scratch() -> Vec<u8> {
    let mut out = SCRATCH.take();
    out.clear();
    out
}

/// Gives the buffer back; one that a burst grew large is let go.
fn keep_scratch(out: Vec<u8>) {
    if out.capacity() <= SCRATCH_KEPT {
        SCRATCH.set(out);
    }
}

struct RelayState {
    /// Fires when the gateway stops; one future for the stream's whole life
    /// (a fresh one per event would lock the token's waiter list each time).
    stop: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    /// One timer for both the keep-alive and the idle timeout, armed at the
    /// earlier deadline and re-armed lazily when it fires: events do not
    /// touch the timer wheel.
    timer: Pin<Box<tokio::time::Sleep>>,
    run: Run,
    stream: StreamConverter<SequentialIds>,
    source: Source,
    upstream_status: StatusCode,
    idle_timeout: Duration,
    last_upstream: Instant,
    last_output: Instant,
    /// Re-attach attempts made (`heal`).
    reattached: usize,
    /// With a shared journal: where every chunk is written first.
    shared: Option<RedisRun>,
    /// Handed to another replica at shutdown (`stopping`): not ended,
    /// not cancelled.
    handed_over: bool,
    /// Pieces handed out by `next` but not journaled yet (`publish`).
    unpublished: Vec<Bytes>,
    /// The number of the last frame journaled.
    published: u64,
    /// The run's task was passed to the journal.
    task_noted: bool,
    /// An end or error of the upstream body met while batching, for the
    /// next step.
    deferred: Option<Option<Result<Bytes, crate::upstream::BodyError>>>,
    /// Scheduler turns a batch may wait through for the next chunk: only
    /// bodies handed over one chunk at a time need them (`batch`).
    batch_turns: u32,
    /// Where the stream's side effects happen (metrics, access log, span,
    /// callbacks).
    observer: RunObserver,
    /// A polled run's memo (`a2a_agui::PollMemo`): a re-attach reads the
    /// task on rather than resubscribing. From the run's own send, or
    /// from the journal for a run taken over.
    polled: Option<PollMemo>,
}

/// The one place an encoding failure is reported: the converter writes
/// only what it built, so this is the gateway's bug, never the input's.
fn encoded(result: Result<(), serde_json::Error>) {
    if let Err(err) = result {
        tracing::error!("gateway failed to encode an event: {err}");
    }
}

fn now_ms() -> Option<u64> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_millis()).ok())
}

impl RelayState {
    fn new(
        mut run: Run,
        stream: StreamConverter<SequentialIds>,
        source: Source,
        shared: Option<RedisRun>,
    ) -> RelayState {
        let idle_timeout = run.agent.config.idle_timeout;
        let first_deadline = Instant::now() + run.keepalive.min(idle_timeout);
        // Ends the run when the gateway stops, or when its client stops it
        // (`RunLog::request_stop`, which has no other way in).
        let stop = run.shutdown.stop.child_token();
        if let Some(log) = &run.log {
            log.set_stopper(stop.clone());
        }
        if let Some(shared) = &shared {
            shared.stop_with(stop.clone());
        }
        RelayState {
            stop: Box::pin(stop.cancelled_owned()),
            timer: Box::pin(tokio::time::sleep_until(first_deadline.into())),
            observer: RunObserver::new(
                run.metrics.clone(),
                run.agent.name(),
                run.conversion.access.take(),
                run.conversion.on_end.take(),
                run.conversion.on_delivered.take(),
                run.conversion.on_usage.take(),
            ),
            run,
            stream,
            source,
            upstream_status: StatusCode::OK,
            idle_timeout,
            last_upstream: Instant::now(),
            last_output: Instant::now(),
            reattached: 0,
            shared,
            handed_over: false,
            unpublished: Vec::new(),
            published: 0,
            task_noted: false,
            deferred: None,
            batch_turns: 0,
            polled: None,
        }
    }

    /// Writes a piece of the body to the journal (to Redis first, when
    /// shared, then to this replica's memory) before the caller hands it to
    /// anyone. A piece without frames (a keep-alive) is not journaled. A
    /// write cut short (the client went away during it) is done again, with
    /// the next piece.
    async fn publish(&mut self, out: &Bytes) {
        let last = self.stream.last_event_number();
        if last <= self.published {
            return;
        }
        self.unpublished.push(out.clone());
        let joined = match self.unpublished.as_slice() {
            [one] => one.clone(),
            many => Bytes::from(many.concat()),
        };
        if let Some(shared) = &mut self.shared {
            // Boxed: a step's future is the size of its largest branch,
            // and every stream holds one; only shared runs need this one.
            Box::pin(shared.write(last, &joined, self.observer.finished)).await;
        }
        if let Some(log) = &self.run.log {
            log.append(last, joined, self.observer.finished);
        }
        self.unpublished.clear();
        self.published = last;
    }

    /// The gateway stops. A shared run is handed over: its lease released
    /// and the client's stream cut without a terminal event, so that the
    /// client's reconnect reaches another replica, which takes the run
    /// over. Any other run ends with `RUN_ERROR GATEWAY_SHUTTING_DOWN`.
    async fn stopping(&mut self) -> Option<Bytes> {
        if !self.run.shutdown.stop.is_cancelled() {
            // The relay cancels the task, whichever replica the stop came
            // to: it may have learned the task after the stop was asked.
            // Waited for briefly, so the agent hears of it before the
            // client sees the end; an agent slow to answer does not hold
            // the stop up.
            if let Some(task) = self.stream.converter().task_id() {
                let (agent, forwarded, task) = (
                    self.run.agent.clone(),
                    self.run.forwarded.clone(),
                    task.to_owned(),
                );
                let cancel =
                    tokio::spawn(async move { send_cancel(&agent, &forwarded, &task).await });
                let _ = tokio::time::timeout(CANCEL_WAIT, cancel).await;
            }
            return Some(self.stopped_by_client());
        }
        if let Some(shared) = &mut self.shared
            && shared.hand_over().await
        {
            self.handed_over = true;
            self.source = Source::Done;
            return None;
        }
        Some(self.fail(
            ErrorCode::GatewayShuttingDown,
            "the gateway is shutting down".to_owned(),
        ))
    }

    /// The client stopped the run (its task is being cancelled): it ends
    /// now, as a cancel the agent reported would end it (everything open
    /// closed, `RUN_FINISHED`), and the upstream call is dropped. The
    /// status is recorded like agent input, so a rebuild ends the same.
    fn stopped_by_client(&mut self) -> Bytes {
        let converter = self.stream.converter();
        let mut cancelled = serde_json::json!({
            "kind": "status-update", "final": true, "status": { "state": "canceled" }
        });
        if let Some(task) = converter.task_id() {
            cancelled["taskId"] = task.into();
        }
        if let Some(context) = converter.context_id() {
            cancelled["contextId"] = context.into();
        }
        let cancelled = serde_json::to_vec(&cancelled).unwrap_or_default();
        self.record(InputOp::Json, &cancelled);
        let mut out = take_scratch();
        encoded(self.stream.feed_json(&cancelled, now_ms(), &mut out));
        // Its events are noted before `finish` makes the next ones (it
        // starts afresh): the cancel's `RUN_FINISHED` is the run's end.
        self.note_events();
        encoded(
            self.stream
                .finish(a2a_agui::StreamEnd::Eof, now_ms(), &mut out),
        );
        self.note_events();
        self.source = Source::Done;
        let piece = self.took(&out);
        keep_scratch(out);
        piece
    }

    fn record(&mut self, op: InputOp, bytes: &[u8]) {
        if let Some(shared) = &mut self.shared {
            shared.record(op, bytes);
        }
    }
}

/// Tells the upstream to cancel a task (whose client went away, or whose
/// interrupt the client cancelled).
pub async fn send_cancel(agent: &Agent, forwarded: &Forwarded, task: &str) {
    // Not even a cancel goes to an agent the request may not call
    // (`Agent::call` sends nothing then).
    let route = agent.route().await;
    let cancel = agent.call(&route, Call::Task(TaskCall::Cancel, task), forwarded);
    let Called { answer, span } = cancel.await;
    match answer {
        Ok(response) => {
            span.answered(response.status);
            tracing::info!(agent = agent.name(), task, status = %response.status, "sent A2A cancel")
        }
        Err(err) => {
            span.fail("unreachable");
            tracing::warn!(agent = agent.name(), task, "A2A cancel failed: {err:?}")
        }
    }
}

/// Relays `upstream` (the result of sending the request) as AG-UI SSE.
/// Upstream failures become a RUN_ERROR inside a 200 stream, which every
/// AG-UI client reports as a failed run rather than a transport error.
fn relay(
    mut state: RelayState,
    upstream: Result<RunAnswer, UpstreamError>,
    started: Instant,
) -> Response {
    let metrics = state.run.metrics.clone();
    let first = match upstream {
        Ok(RunAnswer::Polled { items, memo }) => {
            metrics.observe_upstream_latency(state.run.agent.name(), started.elapsed());
            state.observer.call_span.answered(StatusCode::OK);
            state.source = Source::Items(items);
            state.polled = Some(memo);
            None
        }
        Ok(RunAnswer::Body(response)) => {
            metrics.observe_upstream_latency(state.run.agent.name(), started.elapsed());
            state.observer.call_span.answered(response.status);
            state.upstream_status = response.status;
            state.batch_turns = batch::turns_for(&response);
            let is_sse = is_event_stream(&response.headers);
            state.source = if is_sse && state.upstream_status.is_success() {
                Source::Events(response.body)
            } else {
                Source::Document(response.body, Vec::new())
            };
            None
        }
        Err(UpstreamError::Refused(refusal)) => Some(state.fail(refusal.code, refusal.message)),
        Err(err) => {
            tracing::warn!(
                agent = state.run.agent.name(),
                "upstream call failed: {err:?}"
            );
            let (code, message) = unreachable(&err);
            Some(state.fail(code, message.to_owned()))
        }
    };
    let attached = (Attached(Some(Box::new(state))), first);
    let body = futures::stream::unfold(attached, |(mut attached, first)| async move {
        let state = attached.0.as_mut()?;
        let bytes = match first {
            Some(bytes) => bytes,
            None => state.next_batch().await?,
        };
        state.publish(&bytes).await;
        Some((Ok::<_, std::convert::Infallible>(bytes), (attached, None)))
    });
    sse_response(Body::from_stream(body))
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// The code and the client's message for an upstream call that failed
/// before any answer; the details (its URL among them) are only logged.
pub fn unreachable(err: &UpstreamError) -> (ErrorCode, &'static str) {
    let untrusted = match err {
        UpstreamError::Request(cause) => crate::upstream::tls::untrusted_certificate(cause),
        UpstreamError::Grpc(cause) => crate::upstream::tls::untrusted_certificate(cause),
        _ => false,
    };
    if untrusted {
        (
            ErrorCode::UpstreamUnreachable,
            "the upstream agent's TLS certificate is not trusted",
        )
    } else if err.is_connect() {
        (
            ErrorCode::UpstreamUnreachable,
            "the upstream agent could not be connected to",
        )
    } else if let UpstreamError::NoResponse(_) = err {
        (
            ErrorCode::UpstreamTimeout,
            "the upstream agent sent no response headers in time",
        )
    } else if err.is_timeout() {
        (
            ErrorCode::UpstreamTimeout,
            "the upstream agent did not answer in time",
        )
    } else {
        (
            ErrorCode::UpstreamReadError,
            "the call to the upstream agent failed",
        )
    }
}

pub fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
