//! Amplification: input built to make the converter grow a value (state
//! patches that copy the state into itself, appends, nested values, long
//! ids and messages multiplied by sub-agents) never makes memory or output
//! grow faster than the input does. Bounds are checked while values grow:
//! if they were checked after, these cases would take gigabytes (the
//! 24-copy patch of issue 24 took 8.7 GB) and time out instead of failing.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use a2a_agui::{AguiVersion, Converter, Event, Options, StreamEnd};
use common::check_sequence;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The shared state the converter follows for clients before 1.0.
const MAX_STATE: usize = 1 << 20;

fn artifact(id: &str, parts: Vec<Value>) -> Value {
    json!({ "kind": "artifact-update", "taskId": "t", "contextId": "c", "lastChunk": true,
        "artifact": { "artifactId": id, "parts": parts } })
}

fn data(value: Value) -> Value {
    json!({ "kind": "data", "data": value })
}

/// A JSON Pointer among the few the patches aim at (the root included).
fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        (0u8..6).prop_map(|k| format!("/k{k}")),
        (0u8..6, 0u8..3).prop_map(|(k, j)| format!("/k{k}/{j}")),
        (0u8..6).prop_map(|k| format!("/k{k}/-")),
    ]
}

/// A value nested `depth` deep, `width` wide at each level.
fn nested(depth: u32, width: usize) -> Value {
    if depth == 0 {
        return json!("x".repeat(width * 8));
    }
    Value::Array((0..width).map(|_| nested(depth - 1, width)).collect())
}

fn operation() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (pointer(), pointer()).prop_map(|(from, path)| json!({ "op": "copy", "from": from, "path": path })),
        1 => (pointer(), pointer()).prop_map(|(from, path)| json!({ "op": "move", "from": from, "path": path })),
        2 => (pointer(), 0u32..4, 1usize..6).prop_map(|(path, d, w)| json!({ "op": "add", "path": path, "value": nested(d, w) })),
        1 => (pointer(), 0u32..4, 1usize..6).prop_map(|(path, d, w)| json!({ "op": "replace", "path": path, "value": nested(d, w) })),
        1 => pointer().prop_map(|path| json!({ "op": "remove", "path": path })),
    ]
}

/// One item that tries to grow something.
fn growing_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec(operation(), 1..40)
            .prop_map(|ops| artifact("s", vec![data(json!({ "type": "agui-state-delta", "patch": ops }))])),
        1 => (0u32..5, 1usize..8).prop_map(|(d, w)| artifact("s", vec![data(json!({
            "type": "agui-state-snapshot", "snapshot": { "k0": nested(d, w) } }))])),
        // Every key of a state delta becomes an `add` of its value.
        1 => (0u32..4, 1usize..6).prop_map(|(d, w)| json!({ "kind": "artifact-update", "taskId": "t", "contextId": "c",
            "artifact": { "artifactId": "d", "parts": [{ "kind": "text", "text": "." }],
                "metadata": { "adk_state_delta": { "k1": nested(d, w), "k2": nested(d, w) } } } })),
        2 => (1usize..2000, any::<bool>()).prop_map(|(n, append)| json!({ "kind": "artifact-update",
            "taskId": "t", "contextId": "c", "append": append,
            "artifact": { "artifactId": "a", "parts": [{ "kind": "text", "text": "w ".repeat(n) }] } })),
        1 => (1usize..200).prop_map(|n| json!({ "kind": "status-update", "taskId": "t", "contextId": "c",
            "status": { "state": "working" },
            "referenceTaskIds": (0..n).map(|i| format!("sub-{i}")).collect::<Vec<_>>() })),
    ]
}

fn converted(items: &[Value], options: Options) -> (Vec<Value>, usize) {
    let mut converter = Converter::with_sequential_ids(options);
    let mut out: Vec<Event> = Vec::new();
    for item in items {
        converter.push_value(item, &mut out);
    }
    converter.finish(StreamEnd::Eof, &mut out);
    let written: Vec<String> = out
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    let bytes = written.iter().map(String::len).sum();
    let events = written
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    (events, bytes)
}

fn legacy_with_state() -> Options {
    Options {
        version: AguiVersion::Legacy,
        state: Some(json!({ "k0": [1, 2, 3] })),
        ..Options::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(256), ..ProptestConfig::default() })]

    /// Whatever the patches, the state followed for a client before 1.0
    /// never passes its bound, and every output event stays within what
    /// one event of input and the bound allow.
    #[test]
    fn growing_input_grows_nothing_past_its_bound(
        items in prop::collection::vec(growing_item(), 1..24),
        legacy in any::<bool>(),
    ) {
        let mut all = vec![json!({ "kind": "task", "id": "t", "contextId": "c", "status": { "state": "working" } })];
        all.extend(items);
        let input: usize = all.iter().map(|i| i.to_string().len()).sum();
        let options = if legacy { legacy_with_state() } else { Options::default() };
        let (events, output) = converted(&all, options);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        let largest_input = all.iter().map(|i| i.to_string().len()).max().unwrap_or(0);
        for event in &events {
            if event["type"] == "STATE_SNAPSHOT" {
                let size = event["snapshot"].to_string().len();
                prop_assert!(size <= MAX_STATE.max(largest_input), "a {size}-byte snapshot");
            }
        }
        // Linear: at most one followed state per item, plus a constant
        // factor of what came in.
        prop_assert!(output <= 16 * input + all.len() * MAX_STATE + (64 << 10),
            "{output} bytes out of {input} in");
    }
}

/// The case, and its root-snapshot variant, whole: 24 copies of
/// the state into itself, each doubling it, after a 4 KiB snapshot.
#[test]
fn the_24_copy_patch_is_passed_on_without_being_followed() {
    let copies: Vec<Value> = (0..24)
        .map(|k| json!({ "op": "copy", "from": "", "path": format!("/k{k}") }))
        .collect();
    let items = [
        json!({ "kind": "task", "id": "t", "contextId": "c", "status": { "state": "working" } }),
        artifact(
            "s",
            vec![data(
                json!({ "type": "agui-state-snapshot", "snapshot": { "seed": "x".repeat(4096) } }),
            )],
        ),
        artifact(
            "s",
            vec![data(json!({ "type": "agui-state-delta", "patch": copies }))],
        ),
        json!({ "kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
            "status": { "state": "completed" } }),
    ];
    let started = std::time::Instant::now();
    let (events, output) = converted(&items, legacy_with_state());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(output < 64 << 10, "{output} bytes");
    let delta = events
        .iter()
        .find(|e| e["type"] == "STATE_DELTA")
        .expect("passed on");
    assert_eq!(delta["delta"].as_array().map(Vec::len), Some(24));
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
}

/// A failure with thousands of open sub-agents carries an excerpt of the
/// message to each, not the whole of it; a 64 KiB id is no id.
#[test]
fn a_long_message_or_id_is_not_multiplied() {
    let subagents: Vec<String> = (0..2000).map(|i| format!("s{i}")).collect();
    let long_id = "i".repeat(64 << 10);
    let items = [
        json!({ "kind": "task", "id": "t", "contextId": "c", "status": { "state": "working" } }),
        json!({ "kind": "status-update", "taskId": "t", "contextId": "c", "status": { "state": "working" },
            "referenceTaskIds": subagents }),
        json!({ "kind": "artifact-update", "taskId": "t", "contextId": "c",
            "artifact": { "artifactId": long_id, "parts": (0..200).map(|_| json!({ "kind": "data", "data": 0 })).collect::<Vec<_>>() } }),
        json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32603, "message": "m".repeat(1 << 20) } }),
    ];
    let input: usize = items.iter().map(|i| i.to_string().len()).sum();
    let options = Options {
        version: AguiVersion::V1,
        ..Options::default()
    };
    let (events, output) = converted(&items, options);
    check_sequence(&events).unwrap();
    assert!(output < 2 * input, "{output} bytes out of {input} in");
    assert!(
        !events
            .iter()
            .any(|e| e.to_string().contains(&long_id[..2048]))
    );
}
