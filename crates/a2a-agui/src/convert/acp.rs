//! ACP run events (BeeAI's Agent Communication Protocol, as an A2A bridge
//! streams them): progress, parts, the run's end.

use serde_json::Value;

use super::Converter;
use super::block::Segment;
use super::raw;
use crate::event::custom::{AcpStatus, Custom};
use crate::event::{Event, RunResult};
use crate::ids::IdSource;
use crate::read::{AcpEvent, AcpRunIds};

impl<I: IdSource> Converter<I> {
    pub(super) fn on_acp(&mut self, run: AcpRunIds<'_>, event: AcpEvent<'_>, out: &mut Vec<Event>) {
        self.run.saw_task = true;
        match event {
            AcpEvent::Progress(state) => out.push(Event::Custom(Custom::AcpStatus(AcpStatus {
                run_id: run.run_id.map(str::to_owned),
                session_id: run.session_id.map(str::to_owned),
                state: state.to_owned(),
            }))),
            AcpEvent::Finished {
                state,
                await_request,
            } => {
                let result = RunResult {
                    run_id: run.run_id.map(str::to_owned),
                    session_id: run.session_id.map(str::to_owned),
                    state: Some(state),
                    await_request: await_request.cloned(),
                    ..RunResult::default()
                };
                self.finish_run(Some(result), None, out);
            }
            AcpEvent::Failed { code, message } => self.fail_run(&code, message, out),
            AcpEvent::MessageBoundary => self.blocks.close_text(out),
            AcpEvent::Part(parts) => {
                parts.for_each_block(|_, block| self.on_block(block, Segment::acp(), None, out));
            }
            AcpEvent::Generic { payload, event } => {
                let value = payload
                    .cloned()
                    .unwrap_or_else(|| Value::Object(event.clone()));
                out.push(Event::Custom(Custom::AcpGeneric(value)));
            }
            AcpEvent::Other(whole) => out.push(raw(whole.clone())),
        }
    }
}
