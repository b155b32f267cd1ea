//! One step of the relayed body: what the next poll hands out. Each step
//! converts what the upstream sent (or its end, its silence, its error
//! answer) into frames, notes the run's events, and keeps the timers.

use std::time::Instant;

use a2a_agui::{ErrorCode, StreamEnd};
use agui_journal::InputOp;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;

use super::heal::{self, Healed};
use super::observe::Progress;
use super::{Broke, RelayState, Source, encoded, keep_scratch, now_ms, take_scratch};

impl RelayState {
    /// Makes a step's output a piece (its events were noted after each
    /// converter call: `note_events`).
    pub(super) fn took(&mut self, out: &[u8]) -> Bytes {
        if out.is_empty() {
            return Bytes::new();
        }
        self.last_output = Instant::now();
        Bytes::copy_from_slice(out)
    }

    /// After each converter call: the run's task for the journal (what a
    /// stop cancels, on any replica), then the observer's look at the
    /// events (`RunObserver::converted`).
    pub(super) fn note_events(&mut self) {
        let converter = self.stream.converter();
        if !self.task_noted
            && let Some(task) = converter.task_id()
        {
            self.task_noted = true;
            if let Some(log) = &self.run.log {
                log.note_task(task);
            }
            if let Some(shared) = &mut self.shared {
                shared.note_task(task);
            }
        }
        // The run's usage is read once, when its terminal event is out.
        let usage = if converter.is_finished() {
            converter.usage()
        } else {
            Vec::new()
        };
        let progress = Progress {
            agent: self.run.agent.name(),
            task: converter.task_id(),
            delivered: converter.task_id().is_some() || converter.context_id().is_some(),
            usage: &usage,
        };
        self.observer.converted(self.stream.last_events(), progress);
        self.stream.release_events();
    }

    pub(super) fn finish(&mut self, end: StreamEnd) -> Bytes {
        let mut out = take_scratch();
        encoded(self.stream.finish(end, now_ms(), &mut out));
        self.note_events();
        self.source = Source::Done;
        let piece = self.took(&out);
        keep_scratch(out);
        piece
    }

    pub(super) fn fail(&mut self, code: ErrorCode, message: String) -> Bytes {
        self.finish(StreamEnd::Failed { code, message })
    }

    /// The next piece of the response body, or `None` at its end.
    pub(super) async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.observer.finished {
                return None;
            }
            let broke = match &mut self.source {
                Source::Lost => Broke::Lost,
                Source::Done => return None,
                Source::Events(body) | Source::Document(body, _) | Source::Items(body) => {
                    let chunk = match self.deferred.take() {
                        Some(chunk) => chunk,
                        None => tokio::select! {
                            biased;
                            // The rare paths boxed (here and `reattach`
                            // below): a step's future is the size of its
                            // largest branch, and every stream holds one.
                            _ = self.stop.as_mut() => return Box::pin(self.stopping()).await,
                            chunk = body.next() => chunk,
                            _ = self.timer.as_mut() => {
                                let now = Instant::now();
                                let (keepalive_at, idle_at) = self.deadlines();
                                if now >= idle_at {
                                    let secs = self.idle_timeout.as_secs();
                                    return Some(self.fail(ErrorCode::UpstreamIdleTimeout, format!("the upstream sent nothing for {secs} s")));
                                }
                                if now >= keepalive_at {
                                    self.last_output = now;
                                    self.rearm();
                                    return Some(Bytes::from_static(b": ping\n\n"));
                                }
                                self.rearm();
                                continue;
                            }
                        },
                    };
                    // A polled run's items are news too: a read that
                    // shows nothing new hands on none (`TaskPoll`).
                    self.last_upstream = Instant::now();
                    match chunk {
                        Some(Ok(bytes)) => {
                            if let Some(out) = self.feed(&bytes) {
                                return Some(out);
                            }
                            continue;
                        }
                        Some(Err(err)) => {
                            tracing::warn!(
                                agent = self.run.agent.name(),
                                "reading the upstream response failed: {err:?}"
                            );
                            if err.is_timeout() {
                                return Some(self.fail(
                                    ErrorCode::UpstreamIdleTimeout,
                                    "reading the upstream agent's response failed".to_owned(),
                                ));
                            }
                            Broke::ReadError
                        }
                        None => Broke::Ended,
                    }
                }
            };
            // The call is over (its span ends here, not after the
            // re-attach attempts, which have spans of their own).
            let call = std::mem::take(&mut self.observer.call_span);
            if matches!(broke, Broke::ReadError) {
                call.fail("the answer broke off");
            }
            drop(call);
            // The stream broke: re-attach to the task while it is on (a
            // document body, or a task already over, gives up at once).
            let shown = match Box::pin(self.reattach()).await {
                Healed::Resumed(out) if out.is_empty() => continue,
                Healed::Resumed(out) | Healed::Ended(out) => return Some(out),
                Healed::GaveUp(shown) => shown,
            };
            let end = match broke {
                Broke::Ended => self.end_of_body(),
                Broke::ReadError => self.fail(
                    ErrorCode::UpstreamReadError,
                    "reading the upstream agent's response failed".to_owned(),
                ),
                Broke::Lost => self.fail(
                    ErrorCode::UpstreamReadError,
                    "the run's replica went away and the agent's task could not be re-attached"
                        .to_owned(),
                ),
            };
            return Some(heal::join(vec![shown, end]));
        }
    }

    pub(super) fn deadlines(&self) -> (Instant, Instant) {
        (
            self.last_output + self.run.keepalive,
            self.last_upstream + self.idle_timeout,
        )
    }

    pub(super) fn rearm(&mut self) {
        let (keepalive_at, idle_at) = self.deadlines();
        self.timer.as_mut().reset(keepalive_at.min(idle_at).into());
    }

    /// Feeds an upstream chunk; `None` when it produced nothing to send.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Option<Bytes> {
        let mut out = take_scratch();
        match &mut self.source {
            Source::Events(_) | Source::Lost => self.convert_sse(bytes, &mut out),
            Source::Items(_) => self.convert_item(bytes, &mut out),
            Source::Document(_, buffer) => {
                if buffer.len() + bytes.len() > self.run.max_event_bytes {
                    let limit = self.run.max_event_bytes;
                    return Some(self.fail(
                        ErrorCode::UpstreamEventTooLarge,
                        format!("the upstream response body exceeded the {limit}-byte limit"),
                    ));
                }
                buffer.extend_from_slice(bytes);
                return None;
            }
            Source::Done => return None,
        }
        let piece = (!out.is_empty()).then(|| self.took(&out));
        keep_scratch(out);
        piece
    }

    /// Converts a chunk of an event stream onto `out`.
    pub(super) fn convert_sse(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        self.record(InputOp::Sse, bytes);
        encoded(self.stream.feed_sse(bytes, now_ms(), out));
        if self.stream.is_finished() {
            self.source = Source::Done;
        }
        if !self.stream.last_events().is_empty() {
            // Progress (AG-UI events, not the inspector's tapped frames):
            // a stream that breaks later may be re-attached to as often
            // again.
            self.reattached = 0;
        }
        self.note_events();
    }

    /// Converts one item of a polled task onto `out`: a JSON document,
    /// journaled as one.
    fn convert_item(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        self.record(InputOp::Json, bytes);
        encoded(self.stream.feed_json(bytes, now_ms(), out));
        if self.stream.is_finished() {
            self.source = Source::Done;
        }
        self.note_events();
    }

    pub(super) fn end_of_body(&mut self) -> Bytes {
        let mut out = take_scratch();
        if let Source::Document(_, buffer) = &mut self.source {
            let body = std::mem::take(buffer);
            if !self.upstream_status.is_success() {
                return self.http_error(&body);
            }
            self.record(InputOp::Json, &body);
            encoded(self.stream.feed_json(&body, now_ms(), &mut out));
            self.note_events();
        }
        encoded(self.stream.finish(StreamEnd::Eof, now_ms(), &mut out));
        self.note_events();
        self.source = Source::Done;
        let piece = self.took(&out);
        keep_scratch(out);
        piece
    }

    /// A non-2xx answer. Its body may be a proxy's error page or an
    /// exception naming internal hosts and tokens: it goes to the log (the
    /// log escapes it), the client learns the status and, when the body is
    /// an A2A error (JSON-RPC, `google.rpc.Status`, problem+json), its code.
    pub(super) fn http_error(&mut self, body: &[u8]) -> Bytes {
        let status = self.upstream_status;
        let excerpt: String = String::from_utf8_lossy(body).chars().take(300).collect();
        tracing::warn!(agent = self.run.agent.name(), %status, body = %excerpt, "upstream error answer");
        let message = format!("the upstream agent answered HTTP {}", status.as_u16());
        let parsed = serde_json::from_slice::<Value>(body).ok();
        match parsed.as_ref().and_then(a2a_agui::error_report) {
            Some(report) => self.finish(StreamEnd::AgentError(a2a_agui::ErrorReport {
                message,
                code: report.code,
            })),
            None => self.fail(ErrorCode::UpstreamHttpError, message),
        }
    }
}
