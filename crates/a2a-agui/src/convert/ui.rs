//! Agent-rendered UI (A2UI) as AG-UI activity messages, shaped as
//! `@ag-ui/a2a` shapes them so that frontends' A2UI renderers work
//! unchanged: one `activity` message per surface (its id is the surface
//! id), created empty on first sight, each A2UI message appended to its
//! `operations`.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::MAX_TRACKED;
use crate::digest::WordHashBuilder;
use crate::event::{Event, Id, PatchOp};

/// The `activityType` A2UI renderers look for.
const A2UI_SURFACE: &str = "a2ui-surface";

#[derive(Debug, Default)]
pub(super) struct Surfaces {
    seen: HashSet<String, WordHashBuilder>,
}

impl Surfaces {
    pub(super) fn operation(&mut self, surface_id: &str, operation: &Value, out: &mut Vec<Event>) {
        let message_id: Id = surface_id.into();
        if !self.seen.contains(surface_id) {
            // Past the bound a surface may be announced again: its
            // snapshot does not replace (`replace: false`), so nothing is lost.
            if self.seen.len() < MAX_TRACKED {
                self.seen.insert(surface_id.to_owned());
            }
            out.push(Event::ActivitySnapshot {
                message_id: message_id.clone(),
                activity_type: A2UI_SURFACE,
                content: json!({ "operations": [] }),
                replace: false,
            });
        }
        out.push(Event::ActivityDelta {
            message_id,
            activity_type: A2UI_SURFACE,
            patch: vec![PatchOp::add("/operations/-".to_owned(), operation.clone())],
        });
    }
}
