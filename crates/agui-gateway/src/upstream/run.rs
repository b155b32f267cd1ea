//! A run's call: the message sent the way the agent's route says, streamed
//! or to be polled (`poll`), and what the relay reads of it.

use std::sync::Arc;

use a2a_agui::PollMemo;

use super::call::Called;
use super::outbound::Forwarded;
use super::poll::Sent;
use super::route::Route;
use super::rpc::{Call, OutgoingMessage};
use super::{Agent, StreamResponse, UpstreamBody, UpstreamError};
use crate::config::Mode;
use crate::obs::telemetry::CallSpan;

/// What a run's call came to.
pub enum RunAnswer {
    /// An answer read as it comes: a stream of events, or one document
    /// (an error, a message, a task already over).
    Body(StreamResponse),
    /// A polled task's news, item by item, and what a replica taking the
    /// run over needs to read on (journaled with the run).
    Polled { items: UpstreamBody, memo: PollMemo },
}

/// A run's call: its answer, and its client span.
pub struct RunCalled {
    pub answer: Result<RunAnswer, UpstreamError>,
    pub span: CallSpan,
}

impl RunCalled {
    /// A call whose answer is relayed as it is (a client's own call, a
    /// cancel).
    pub fn as_is(called: Called) -> RunCalled {
        RunCalled {
            answer: called.answer.map(RunAnswer::Body),
            span: called.span,
        }
    }
}

impl Agent {
    /// Sends a run's message the way `route` says: a stream, or a send to
    /// poll. `limit` bounds each answer read whole (a send's, a task's).
    pub async fn run(
        self: &Arc<Self>,
        route: Route,
        (message, activate): (&OutgoingMessage, &[String]),
        forwarded: &Forwarded,
        limit: usize,
    ) -> RunCalled {
        if route.mode == Mode::Stream {
            let send = Call::Send { message, activate };
            return RunCalled::as_is(self.call(&route, send, forwarded).await);
        }
        let sending = self.send_to_poll(route, (message, activate), forwarded, limit);
        let (sent, span) = sending.await;
        let answer = sent.map(|sent| match sent {
            Sent::Polling { items, memo } => RunAnswer::Polled { items, memo },
            Sent::Answer(document) => RunAnswer::Body(document),
        });
        RunCalled { answer, span }
    }
}
