//! The one place a converted stream's side effects happen. After each
//! converter call, `RunObserver::converted` sees the events it wrote, once:
//! they are counted (metrics), noted (the access log: events, the
//! `RUN_ERROR` code, the tokens used), end the call's span as failed when
//! the run fails, and tell the caller (the input was delivered; the run
//! ended; what it used). Nothing else in the relay counts, logs or calls
//! back per event.

use std::sync::Arc;

use a2a_agui::{ErrorCode, Event, TokenUsage};

use super::{OnEnd, OnUsage};
use crate::obs::access::AccessNote;
use crate::obs::metrics::{ActiveStream, Metrics, bounded_code};
use crate::obs::telemetry::CallSpan;

pub(super) struct RunObserver {
    access: Option<AccessNote>,
    on_end: Option<OnEnd>,
    on_delivered: Option<Box<dyn FnOnce() + Send>>,
    on_usage: Option<OnUsage>,
    /// The stream's counters, resolved once: an event is one atomic add.
    active: ActiveStream,
    metrics: Arc<Metrics>,
    /// The client span of the call whose answer is being read (the first,
    /// or the last re-attach): ended with it.
    pub(super) call_span: CallSpan,
    /// The run's terminal event was seen.
    pub(super) finished: bool,
}

/// What the agent has said so far, as the converter knows it.
pub(super) struct Progress<'a> {
    pub(super) agent: &'a str,
    pub(super) task: Option<&'a str>,
    /// The agent named a task or a context: it took the call's input (an
    /// error answer names neither).
    pub(super) delivered: bool,
    /// The run's token usage, once it ended (else empty).
    pub(super) usage: &'a [TokenUsage],
}

impl RunObserver {
    pub(super) fn new(
        metrics: Arc<Metrics>,
        agent: &str,
        access: Option<AccessNote>,
        on_end: Option<OnEnd>,
        on_delivered: Option<Box<dyn FnOnce() + Send>>,
        on_usage: Option<OnUsage>,
    ) -> RunObserver {
        RunObserver {
            active: metrics.stream_started(agent),
            metrics,
            access,
            on_end,
            on_delivered,
            on_usage,
            call_span: CallSpan::default(),
            finished: false,
        }
    }

    /// The events of one converter call. Once per call: the converter's
    /// `last_events` are those of its last call only, so a second look
    /// would count them twice and a missing one would lose them.
    pub(super) fn converted(&mut self, events: &[Event], progress: Progress<'_>) {
        if progress.delivered
            && let Some(on_delivered) = self.on_delivered.take()
        {
            on_delivered();
        }
        if let Some(note) = &self.access {
            note.add_events(events.len());
        }
        for event in events {
            self.active.metrics().count_event(event);
            if !event.is_terminal() {
                continue;
            }
            self.finished = true;
            if let Event::RunError { code, .. } = event {
                let code = code.as_deref().unwrap_or("unknown");
                self.metrics.count_error(progress.agent, code);
                // A client that left is no failure of the call.
                if code != ErrorCode::ClientDisconnected.as_str() {
                    self.call_span.fail(bounded_code(code));
                }
                if let Some(note) = &self.access {
                    note.run_error(code);
                }
            }
            self.used(progress.agent, progress.usage);
            if let Some(on_end) = self.on_end.take() {
                on_end(event, progress.task);
            }
        }
    }

    /// The run's usage, once it ended (or its client left it with no
    /// journal to go on in): counted, noted in the access log and on the
    /// call's span, and charged to the caller.
    pub(super) fn used(&mut self, agent: &str, usage: &[TokenUsage]) {
        if usage.is_empty() {
            return;
        }
        self.metrics.count_tokens(agent, usage);
        let sum = |f: fn(&TokenUsage) -> Option<u64>| {
            usage.iter().filter_map(f).fold(0u64, u64::saturating_add)
        };
        let (input, output) = (sum(|u| u.input_tokens), sum(|u| u.output_tokens));
        self.call_span.usage(input, output);
        if let Some(note) = &self.access {
            note.tokens(input, output);
        }
        if let Some(on_usage) = self.on_usage.take() {
            on_usage(TokenUsage::total_of(usage));
        }
    }
}
