//! The AG-UI input extension: what an AG-UI client sends besides its new
//! messages (tools, state, context, instructions, the rest of
//! `forwardedProps`, `resume`), carried to the agent in A2A metadata. The
//! gateway declares it in the card it serves and activates it per request
//! (`A2A-Extensions`), only when there is something to carry.
//!
//! The keys are a public contract (`docs/extension.md`); `x-agui-state`
//! is the name ag-ui PR #1936 gives request-level state, so it is also
//! written there.

use serde_json::{Map, Value, json};

/// The extension's URI, as the served card declares it.
pub const URI: &str = "urn:agui-gateway:a2a-extension:agui-input:v1";

/// What every key of the extension starts with.
pub const KEY_PREFIX: &str = "x-agui-";

/// Message metadata keys.
pub mod key {
    pub const TOOLS: &str = "x-agui-tools";
    pub const STATE: &str = "x-agui-state";
    pub const CONTEXT: &str = "x-agui-context";
    pub const INSTRUCTIONS: &str = "x-agui-instructions";
    pub const FORWARDED_PROPS: &str = "x-agui-forwarded-props";
    pub const RESUME: &str = "x-agui-resume";
    pub const RUN: &str = "x-agui-run";
}

/// What travels under the extension; empty members are left out.
#[derive(Debug, Default)]
pub struct Carried {
    /// `tools`, each `{name, description, parameters}`.
    pub tools: Vec<Value>,
    /// `state`, when not empty.
    pub state: Option<Value>,
    /// `context`, each `{description, value}`.
    pub context: Vec<Value>,
    /// System and developer messages, each `{role, content}`.
    pub instructions: Vec<Value>,
    /// `forwardedProps` without the members the gateway reads itself.
    pub forwarded_props: Map<String, Value>,
    /// `resume`, as sent.
    pub resume: Vec<Value>,
}

impl Carried {
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.state.is_none()
            && self.context.is_empty()
            && self.instructions.is_empty()
            && self.forwarded_props.is_empty()
            && self.resume.is_empty()
    }

    /// Adds the extension's keys to the message metadata; `false` (and
    /// nothing added) when there is nothing to carry.
    pub fn write(
        self,
        thread_id: &str,
        run_id: &str,
        metadata: &mut Map<String, Value>,
        request: &mut Map<String, Value>,
    ) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut put = |key: &str, value: Value| {
            metadata.insert(key.to_owned(), value);
        };
        if !self.tools.is_empty() {
            put(key::TOOLS, Value::Array(self.tools));
        }
        if let Some(state) = self.state {
            request.insert(key::STATE.to_owned(), state.clone());
            put(key::STATE, state);
        }
        if !self.context.is_empty() {
            put(key::CONTEXT, Value::Array(self.context));
        }
        if !self.instructions.is_empty() {
            put(key::INSTRUCTIONS, Value::Array(self.instructions));
        }
        if !self.forwarded_props.is_empty() {
            put(key::FORWARDED_PROPS, Value::Object(self.forwarded_props));
        }
        if !self.resume.is_empty() {
            put(key::RESUME, Value::Array(self.resume));
        }
        put(key::RUN, json!({ "threadId": thread_id, "runId": run_id }));
        true
    }
}

/// The extension as the served card lists it.
pub fn card_entry() -> Value {
    json!({
        "uri": URI,
        "description": "AG-UI input through agui-gateway: the client's tools, state, context, instructions, forwardedProps and resume answers in message metadata (x-agui-*); tool results as tool_result data parts",
        "required": false,
    })
}
