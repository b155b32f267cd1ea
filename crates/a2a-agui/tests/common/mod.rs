//! The AG-UI sequencing rules, checked over serialised events: what
//! `@ag-ui/client`'s `verifyEvents` enforces plus `ag-ui-validate`'s error-
//! and warning-level rules. Shared by the property and recording tests.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)] // test code

use std::collections::{HashMap, HashSet};

use a2a_agui::{Converter, Event, IdSource, Options, StreamEnd};
use serde_json::Value;

pub fn check_sequence(events: &[Value]) -> Result<(), String> {
    let first = events.first().ok_or("no events at all")?;
    if first["type"] != "RUN_STARTED" {
        return Err(format!("first event is {} (AGUI001)", first["type"]));
    }
    let last = events.last().ok_or("no events")?;
    if last["type"] != "RUN_FINISHED" && last["type"] != "RUN_ERROR" {
        return Err(format!("last event is {} (AGUI003/508)", last["type"]));
    }
    let (thread, run) = (first["threadId"].clone(), first["runId"].clone());
    let mut open_text = HashSet::new();
    let mut used_text = HashSet::new();
    let mut open_tools: HashMap<String, String> = HashMap::new();
    let mut ended_tools = HashSet::new();
    let mut used_tools = HashSet::new();
    let mut open_spans = HashSet::new();
    let mut open_reasoning = HashSet::new();
    let mut used_reasoning = HashSet::new();
    let mut result_ids = HashSet::new();
    let mut activities = HashSet::new();
    let mut open_subagents = HashSet::new();
    let mut answered_tools = HashSet::new();
    let mut subagents_seen = HashSet::new();
    for (index, event) in events.iter().enumerate() {
        let kind = event["type"].as_str().ok_or("event without a type")?;
        let at = |msg: String| format!("event {index} {kind}: {msg}");
        let id = |key: &str| -> Result<String, String> {
            event[key]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| at(format!("{key} missing or not a string")))
        };
        if index > 0 && kind == "RUN_STARTED" {
            return Err(at("second RUN_STARTED (AGUI002)".into()));
        }
        if index + 1 < events.len() && (kind == "RUN_FINISHED" || kind == "RUN_ERROR") {
            return Err(at("terminal event before the end (AGUI004)".into()));
        }
        for (key, value) in event.as_object().ok_or("event is not an object")? {
            if value.is_null() {
                return Err(at(format!("field {key} is null")));
            }
        }
        match kind {
            "RUN_STARTED" | "RUN_ERROR" | "CUSTOM" | "RAW" => {}
            "RUN_FINISHED" => {
                if event["threadId"] != thread || event["runId"] != run {
                    return Err(at("ids differ from RUN_STARTED (AGUI008)".into()));
                }
                if !open_text.is_empty() || !open_tools.is_empty() {
                    return Err(at("text or tool call still open".into()));
                }
                if !open_spans.is_empty() || !open_reasoning.is_empty() {
                    return Err(at("reasoning still open".into()));
                }
                if !open_subagents.is_empty() {
                    return Err(at("subagent still open".into()));
                }
                // A call the client runs gets no result from the run.
                for pending in event["result"]["pendingToolCallIds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let pending = pending.as_str().ok_or("pending id not a string")?;
                    if !ended_tools.contains(pending) || answered_tools.contains(pending) {
                        return Err(at(format!("pending call {pending} not ended, or answered")));
                    }
                }
            }
            "TEXT_MESSAGE_START" => {
                let id = id("messageId")?;
                if !used_text.insert(id.clone()) {
                    return Err(at(format!("messageId {id} reused (AGUI104/106)")));
                }
                open_text.insert(id);
            }
            "TEXT_MESSAGE_CONTENT" => {
                if !open_text.contains(&id("messageId")?) {
                    return Err(at("content for a message not open (AGUI101)".into()));
                }
                if event["delta"].as_str().is_none_or(str::is_empty) {
                    return Err(at("empty delta (AGUI105, fatal on 0.0.48)".into()));
                }
            }
            "TEXT_MESSAGE_END" => {
                if !open_text.remove(&id("messageId")?) {
                    return Err(at("end for a message not open (AGUI102)".into()));
                }
            }
            "TOOL_CALL_START" => {
                let id = id("toolCallId")?;
                if !used_tools.insert(id.clone()) {
                    return Err(at(format!("toolCallId {id} reused (AGUI205)")));
                }
                if let Some(parent) = event.get("parentMessageId") {
                    let parent = parent.as_str().ok_or("parentMessageId not a string")?;
                    if !used_text.contains(parent) {
                        return Err(at("parentMessageId names no message (AGUI208)".into()));
                    }
                }
                id_check(event, "toolCallName").map_err(&at)?;
                open_tools.insert(id, String::new());
            }
            "TOOL_CALL_ARGS" => {
                let args = open_tools
                    .get_mut(&id("toolCallId")?)
                    .ok_or_else(|| at("args for a call not open (AGUI201)".into()))?;
                args.push_str(event["delta"].as_str().ok_or("delta not a string")?);
            }
            "TOOL_CALL_END" => {
                let id = id("toolCallId")?;
                let args = open_tools
                    .remove(&id)
                    .ok_or_else(|| at("end for a call not open (AGUI202)".into()))?;
                if !args.is_empty() && serde_json::from_str::<Value>(&args).is_err() {
                    return Err(at(format!("arguments are not JSON: {args} (AGUI204)")));
                }
                ended_tools.insert(id);
            }
            "TOOL_CALL_RESULT" => {
                let id = id("toolCallId")?;
                answered_tools.insert(id.clone());
                if !ended_tools.contains(&id) {
                    return Err(at(
                        "result before END or for an unknown call (AGUI206/207)".into()
                    ));
                }
                if !event["content"].is_string() || event["role"] != "tool" {
                    return Err(at("content must be a string, role tool".into()));
                }
                let message_id = self::id_check(event, "messageId").map_err(&at)?;
                if used_text.contains(&message_id) || !result_ids.insert(message_id) {
                    return Err(at("result messageId reused".into()));
                }
            }
            "REASONING_START" => {
                if !open_spans.insert(id("messageId")?) {
                    return Err(at("span already open".into()));
                }
            }
            "REASONING_END" => {
                if !open_spans.remove(&id("messageId")?) {
                    return Err(at("span not open".into()));
                }
            }
            "REASONING_MESSAGE_START" => {
                let id = id("messageId")?;
                if event["role"] != "reasoning" || !used_reasoning.insert(id.clone()) {
                    return Err(at("bad or reused reasoning message".into()));
                }
                open_reasoning.insert(id);
            }
            "REASONING_MESSAGE_CONTENT" => {
                if !open_reasoning.contains(&id("messageId")?) {
                    return Err(at(
                        "reasoning content for a message not open (AGUI401)".into()
                    ));
                }
                if event["delta"].as_str().is_none_or(str::is_empty) {
                    return Err(at("empty reasoning delta".into()));
                }
            }
            "REASONING_MESSAGE_END" => {
                if !open_reasoning.remove(&id("messageId")?) {
                    return Err(at("reasoning end for a message not open".into()));
                }
            }
            "STATE_DELTA" => patch_check(&event["delta"]).map_err(at)?,
            "STATE_SNAPSHOT" => {
                if event.get("snapshot").is_none() {
                    return Err(at("snapshot missing".into()));
                }
            }
            "SUBAGENT_STARTED" => {
                id("name")?;
                let subagent = id("subagentRunId")?;
                if !subagents_seen.insert(subagent.clone()) {
                    return Err(at(format!("subagent {subagent} started twice")));
                }
                open_subagents.insert(subagent);
            }
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => {
                if !open_subagents.remove(&id("subagentRunId")?) {
                    return Err(at("end of a subagent not open".into()));
                }
                if kind == "SUBAGENT_ERROR" {
                    id("message")?;
                }
            }
            "ACTIVITY_SNAPSHOT" => {
                let id = id_check(event, "messageId").map_err(at)?;
                id_check(event, "activityType").map_err(at)?;
                if !event["content"].is_object() {
                    return Err(at("activity content is not an object".into()));
                }
                activities.insert(id);
            }
            "ACTIVITY_DELTA" => {
                if !activities.contains(&id_check(event, "messageId").map_err(at)?) {
                    return Err(at("activity delta before its snapshot".into()));
                }
                id_check(event, "activityType").map_err(at)?;
                patch_check(&event["patch"]).map_err(at)?;
            }
            other => return Err(at(format!("event type {other} is not in the safe subset"))),
        }
        if kind == "CUSTOM" && !event["name"].as_str().is_some_and(|n| n.contains('.')) {
            return Err(at("CUSTOM name is not namespaced".into()));
        }
    }
    Ok(())
}

/// An RFC 6902 patch as the converter writes it: `add` operations with a
/// JSON Pointer path and a value.
fn patch_check(patch: &Value) -> Result<(), String> {
    let ops = patch.as_array().filter(|ops| !ops.is_empty());
    let ops = ops.ok_or("patch is not a non-empty array")?;
    for op in ops {
        let pointer = |key: &str| {
            op[key]
                .as_str()
                .is_some_and(|p| p.is_empty() || p.starts_with('/'))
        };
        let valid = pointer("path")
            && match op["op"].as_str() {
                Some("add" | "replace" | "test") => op.get("value").is_some(),
                Some("remove") => true,
                Some("move" | "copy") => pointer("from"),
                _ => false,
            };
        if !valid {
            return Err(format!("bad patch operation {op}"));
        }
    }
    Ok(())
}

fn id_check(event: &Value, key: &str) -> Result<String, String> {
    event[key]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("{key} missing or empty"))
}

/// Splits an AG-UI SSE body the way `@ag-ui/client` does (LF only).
pub fn parse_agui_body(body: &[u8]) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    if text.contains('\r') {
        return Err("CR in the output".into());
    }
    let mut events = Vec::new();
    for frame in text.split("\n\n").filter(|f| !f.is_empty()) {
        let mut lines = frame.lines();
        let line = lines.next().unwrap_or_default();
        if lines.next().is_some() {
            return Err(format!("frame of several lines: {frame:?}"));
        }
        let json = line
            .strip_prefix("data: ")
            .ok_or_else(|| format!("frame without data: {frame:?}"))?;
        events.push(serde_json::from_str(json).map_err(|e| format!("{e}: {json}"))?);
    }
    Ok(events)
}

/// The AG-UI events, as JSON, of a run whose agent sent `items`, then
/// ended.
pub fn convert_items(items: &[Value]) -> Vec<Value> {
    let mut converter = Converter::with_sequential_ids(Options::default());
    let mut out: Vec<Event> = Vec::new();
    for item in items {
        converter.push_value(item, &mut out);
    }
    finished(converter, out)
}

/// The AG-UI events, as JSON, of a run whose input ends now: `out`, what
/// it wrote so far, and its end.
pub fn finished<I: IdSource>(mut converter: Converter<I>, mut out: Vec<Event>) -> Vec<Value> {
    converter.finish(StreamEnd::Eof, &mut out);
    out.iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}
