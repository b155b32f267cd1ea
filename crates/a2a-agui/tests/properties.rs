//! Property tests: whatever the A2A input (valid, truncated, reordered,
//! malformed, random bytes), the AG-UI output obeys `@ag-ui/client`'s
//! `verifyEvents` rules and `ag-ui-validate`'s error- and warning-level rules.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use a2a_agui::{
    AguiVersion, Converter, Event, Options, OutputFormat, StreamEnd, convert_recording,
};
use common::{check_sequence, parse_agui_body};
use proptest::prelude::*;
use serde_json::{Value, json};

fn convert_items(items: &[Value], end: StreamEnd) -> Vec<Value> {
    convert_items_with(items, end, Options::default())
}

fn convert_items_with(items: &[Value], end: StreamEnd, options: Options) -> Vec<Value> {
    let mut converter = Converter::with_sequential_ids(options);
    let mut out: Vec<Event> = Vec::new();
    for item in items {
        converter.push_value(item, &mut out);
    }
    converter.finish(end, &mut out);
    out.iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------
// Random A2A input, in every dialect and with every hint.

fn small_id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("c".to_owned()),
        Just(String::new())
    ]
}

fn state() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("submitted"),
        Just("working"),
        Just("TASK_STATE_WORKING"),
        Just("input-required"),
        Just("auth-required"),
        Just("completed"),
        Just("TASK_STATE_CANCELLED"),
        Just("canceled"),
        Just("failed"),
        Just("rejected"),
        Just("bogus"),
    ]
    .prop_map(str::to_owned)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z é\n]{0,12}"]
}

fn metadata() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(Value::Null),
        1 => (small_id(), any::<bool>()).prop_map(|(b, prefixed)| {
            let k = |s: &str| if prefixed { format!("agui_{s}") } else { s.to_owned() };
            json!({ k("event_type"): "thinking", k("block_id"): b, k("block_index"): 0.0 })
        }),
        1 => Just(json!({ "event_type": "thinking" })),
        1 => (small_id(), prop::option::of(any::<bool>())).prop_map(|(id, fin)| {
            let mut m = json!({ "event_type": "tool_call", "tool_call_id": id, "is_error": false });
            if let Some(fin) = fin { m["is_final"] = json!(fin); }
            m
        }),
        1 => small_id().prop_map(|id| json!({ "event_type": "tool_call", "tool_call_id": id, "tool_name": "t" })),
        1 => small_id().prop_map(|id| json!({ "event_type": "thinking_complete", "block_id": id, "signature": "s" })),
        1 => Just(json!({ "event_type": "error", "error_code": "E" })),
        1 => Just(json!({ "kind": "citation", "url": "u", "start_index": 0, "end_index": 3 })),
        1 => Just(json!({ "kind": "trajectory", "tool_name": "w", "tool_input": { "q": 1 }, "tool_output": { "r": 2 } })),
        1 => Just(json!({ "kind": "trajectory", "message": "step" })),
    ]
}

fn part() -> impl Strategy<Value = Value> {
    let body = prop_oneof![
        4 => text().prop_map(|t| json!({ "kind": "text", "text": t })),
        2 => text().prop_map(|t| json!({ "text": t })),
        1 => Just(json!({ "kind": "file", "file": { "uri": "https://x/y.png", "mimeType": "image/png" } })),
        1 => Just(json!({ "url": "https://x/doc.pdf", "mediaType": "application/pdf" })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "id": id, "name": "n", "arguments": { "q": "x" } } })),
        1 => small_id().prop_map(|id| json!({ "data": { "data": { "tool_call_id": id, "content": "r", "error": "" } } })),
        1 => Just(json!({ "kind": "data", "data": { "foo": 1 } })),
        1 => (small_id(), text(), any::<bool>()).prop_map(|(id, t, done)| json!({ "kind": "data", "data":
            { "type": "thinking", "id": id, "content": t, "status": if done { "completed" } else { "active" } } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "type": "tool_use", "id": id, "name": "n", "arguments": { "q": 1 } } })),
        1 => (small_id(), any::<bool>()).prop_map(|(id, err)| json!({ "kind": "data", "data":
            { "type": "tool_result", "tool_call_id": id, "content": "r", "is_error": err } })),
        1 => text().prop_map(|t| json!({ "content_type": "text/plain", "content": t })),
        1 => Just(json!(7)),
        // Real frameworks: ADK, @ag-ui/a2a, LangGraph, A2UI v0.8 / v0.9.
        1 => (small_id(), text()).prop_map(|(id, t)| json!({ "kind": "text", "text": t, "metadata": { "adk_thought": true, "id": id } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "id": id, "name": "get", "args": { "q": 1 } }, "metadata": { "adk_type": "function_call" } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "id": id, "name": "get", "response": { "r": 2 } }, "metadata": { "adk_type": "function_response" } })),
        1 => Just(json!({ "kind": "data", "data": { "code": "print(1)", "language": "PYTHON" }, "metadata": { "adk_type": "executable_code" } })),
        1 => any::<bool>().prop_map(|ok| json!({ "kind": "data", "data": { "outcome": if ok { "OUTCOME_OK" } else { "OUTCOME_FAILED" }, "output": "1\n" }, "metadata": { "adk_type": "code_execution_result" } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "type": "tool-call", "id": id, "name": "n", "arguments": { "a": 1 } } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "type": "tool-result", "toolCallId": id, "payload": { "b": 2 } } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "tool_results": [{ "toolCallId": id, "name": "n", "content": "c", "status": "success" }] } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": { "surfaceUpdate": { "surfaceId": id, "components": [] } }, "metadata": { "mimeType": "application/json+a2ui" } })),
        1 => small_id().prop_map(|id| json!({ "kind": "data", "data": [{ "version": "v0.9", "createSurface": { "surfaceId": id } }, { "version": "v0.9", "updateDataModel": { "surfaceId": id, "value": {} } }] })),
    ];
    (body, metadata()).prop_map(|(mut part, meta)| {
        if !meta.is_null() && part.is_object() {
            part["metadata"] = meta;
        }
        part
    })
}

fn message() -> impl Strategy<Value = Value> {
    (small_id(), prop::collection::vec(part(), 0..4), any::<bool>(), 0..4u8).prop_map(|(id, parts, user, meta)| {
        let mut m = json!({ "messageId": id, "role": if user { "user" } else { "agent" }, "parts": parts });
        match meta {
            1 => m["metadata"] = json!({ "https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1": { "citations": [{ "url": "u" }] } }),
            2 => m["metadata"] = json!({ "https://a2a-extensions.beeai.dev/ui/trajectory/v1": { "title": "t" }, "x": 1 }),
            3 => m["metadata"] = json!({ "adk_actions": { "stateDelta": { "city": "Paris", "a/b": 1 } } }),
            _ => {}
        }
        m
    })
}

fn artifact() -> impl Strategy<Value = Value> {
    (
        small_id(),
        prop::collection::vec(part(), 0..3),
        any::<bool>(),
        any::<bool>(),
        0..4u8,
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
    )
        .prop_map(|(id, parts, append, last, metadata, partial)| {
            let mut a = json!({ "artifactId": id, "parts": parts });
            match metadata {
                1 => a["metadata"] = json!({ "commands": [{ "name": "C", "params": [] }] }),
                // ADK's new executor: per-event metadata on the artifact.
                2 => a["metadata"] = json!({ "adk_event_id": "e1", "adk_actions": { "stateDelta": { "k": 1 } } }),
                3 => a["metadata"] = json!({ "commands": [{ "name": "D", "params": [] }], "adk_actions": { "stateDelta": { "k": 2 } } }),
                _ => {}
            }
            let mut update = json!({ "artifact": a, "append": append, "lastChunk": last });
            if let Some(partial) = partial {
                // Hector v2's per-event metadata.
                update["metadata"] = json!({ "partial": partial, "event_id": "e", "author": "a" });
            }
            update
        })
}

fn item() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => state().prop_map(|s| json!({ "kind": "task", "id": "t1", "contextId": "c1", "status": { "state": s } })),
        3 => (state(), prop::option::of(message()), any::<bool>()).prop_map(|(s, m, fin)| {
            let mut status = json!({ "state": s });
            if let Some(m) = m { status["message"] = m; }
            json!({ "kind": "status-update", "taskId": "t1", "contextId": "c1", "status": status, "final": fin })
        }),
        5 => message().prop_map(|mut m| { m["kind"] = json!("message"); m }),
        1 => message().prop_map(|m| json!({ "message": m })),
        5 => artifact().prop_map(|mut a| { a["kind"] = json!("artifact-update"); a }),
        1 => artifact().prop_map(|a| json!({ "jsonrpc": "2.0", "id": 1, "result": { "artifactUpdate": a } })),
        1 => (state(), prop::collection::vec(artifact(), 0..3)).prop_map(|(s, arts)| {
            let artifacts: Vec<Value> = arts.into_iter().map(|a| a["artifact"].clone()).collect();
            json!({ "task": { "id": "t1", "contextId": "c1", "status": { "state": s }, "artifacts": artifacts } })
        }),
        1 => Just(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32001, "message": "nope" } })),
        1 => prop_oneof![Just("run.created"), Just("message.part"), Just("run.completed"), Just("run.failed"), Just("generic")]
            .prop_flat_map(|t| part().prop_map(move |p| json!({ "type": t, "part": p, "run": { "run_id": "r", "session_id": "s" } }))),
        1 => Just(json!({ "unknown": true })),
        1 => Just(json!(null)),
    ]
}

/// What an AG-UI client may ask for: interrupts, 1.0 events, tools it
/// runs itself (named like the generated calls).
fn options() -> impl Strategy<Value = Options> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::sample::subsequence(vec!["n", "get", "t"], 0..=3),
    )
        .prop_map(|(interrupts, v1, tools)| Options {
            interrupts,
            version: if v1 {
                AguiVersion::V1
            } else {
                AguiVersion::Legacy
            },
            client_tools: tools.into_iter().map(str::to_owned).collect(),
            ..Options::default()
        })
}

/// An item of a delegated task, or shared state from the agent.
fn delegated_or_state() -> impl Strategy<Value = Value> {
    prop_oneof![
        (state(), prop::option::of(message())).prop_map(|(s, m)| {
            let mut status = json!({ "state": s });
            if let Some(m) = m {
                status["message"] = m;
            }
            json!({ "kind": "status-update", "taskId": "t2", "contextId": "c1", "status": status })
        }),
        artifact().prop_map(|mut a| {
            a["kind"] = json!("artifact-update");
            a["taskId"] = json!("t2");
            a
        }),
        message().prop_map(|mut m| {
            m["kind"] = json!("message");
            m["referenceTaskIds"] = json!(["t2", "t3", "t1"]);
            m
        }),
        prop_oneof![
            Just(json!({ "type": "agui-state-snapshot", "snapshot": { "k": 1 } })),
            Just(
                json!({ "type": "agui-state-delta", "patch": [{ "op": "remove", "path": "/k" }] })
            ),
            Just(json!({ "type": "agui-state-delta", "patch": [] })),
            Just(json!({ "type": "agui-state-delta", "patch": [{ "op": "move", "path": "/a" }] })),
        ]
        .prop_map(
            |data| json!({ "kind": "artifact-update", "taskId": "t1", "contextId": "c1",
            "artifact": { "artifactId": "s", "parts": [{ "kind": "data", "data": data }] } })
        ),
    ]
}

fn end() -> impl Strategy<Value = StreamEnd> {
    prop_oneof![
        3 => Just(StreamEnd::Eof),
        1 => Just(StreamEnd::Failed { code: a2a_agui::ErrorCode::UpstreamTimeout, message: "idle".into() }),
    ]
}

fn sse_body(items: &[Value], crlf: bool) -> Vec<u8> {
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut body = String::new();
    for item in items {
        body.push_str("data: ");
        body.push_str(&item.to_string());
        body.push_str(newline);
        body.push_str(newline);
    }
    body.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    #[test]
    fn any_item_sequence_yields_a_valid_run(items in prop::collection::vec(item(), 0..14), end in end()) {
        let events = convert_items(&items, end);
        prop_assert!(check_sequence(&events).is_ok(), "{:?}\n{}", check_sequence(&events),
            events.iter().map(Value::to_string).collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn any_client_options_yield_a_valid_run(
        items in prop::collection::vec(prop_oneof![4 => item(), 1 => delegated_or_state()], 0..14),
        end in end(),
        options in options(),
    ) {
        let events = convert_items_with(&items, end, options);
        prop_assert!(check_sequence(&events).is_ok(), "{:?}\n{}", check_sequence(&events),
            events.iter().map(Value::to_string).collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn reordered_items_still_yield_a_valid_run(mut items in prop::collection::vec(item(), 1..10), seed in any::<u64>()) {
        // A deterministic shuffle driven by the seed.
        let mut state = seed | 1;
        for i in (1..items.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            items.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let events = convert_items(&items, StreamEnd::Eof);
        prop_assert!(check_sequence(&events).is_ok(), "{:?}", check_sequence(&events));
    }

    #[test]
    fn truncated_sse_bodies_yield_a_valid_run(items in prop::collection::vec(item(), 1..8), crlf in any::<bool>(), cut in any::<prop::sample::Index>()) {
        let body = sse_body(&items, crlf);
        let cut = cut.index(body.len() + 1);
        let out = convert_recording(&body[..cut], Options::default(), OutputFormat::Agui).unwrap();
        let events = parse_agui_body(&out).unwrap();
        prop_assert!(check_sequence(&events).is_ok(), "{:?}", check_sequence(&events));
    }

    #[test]
    fn arbitrary_bytes_yield_a_valid_run(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let out = convert_recording(&bytes, Options::default(), OutputFormat::Agui).unwrap();
        let events = parse_agui_body(&out).unwrap();
        prop_assert!(check_sequence(&events).is_ok(), "{:?}", check_sequence(&events));
        // The named-event dialect renders the same conversion without failing.
        prop_assert!(convert_recording(&bytes, Options::default(), OutputFormat::Hector).is_ok());
    }

    #[test]
    fn sse_like_garbage_yields_a_valid_run(lines in prop::collection::vec(prop_oneof![
        Just("data: {".to_owned()), Just("data: }".to_owned()), Just(String::new()), Just(": ping".to_owned()),
        Just("event: error".to_owned()), Just("event: done".to_owned()), Just("data: {\"kind\":\"task\"}".to_owned()),
        Just("data: {\"result\":null}".to_owned()), "data: [a-z{}\":,]{0,20}",
    ], 0..20)) {
        let body = lines.join("\n");
        let out = convert_recording(body.as_bytes(), Options::default(), OutputFormat::Agui).unwrap();
        let events = parse_agui_body(&out).unwrap();
        prop_assert!(check_sequence(&events).is_ok(), "{:?}", check_sequence(&events));
    }

    #[test]
    fn chunking_never_changes_the_output(items in prop::collection::vec(item(), 1..8), crlf in any::<bool>(), sizes in prop::collection::vec(1usize..40, 1..20)) {
        use a2a_agui::{SequentialIds, StreamConverter};
        let body = sse_body(&items, crlf);
        let whole = convert_recording(&body, Options::default(), OutputFormat::Agui).unwrap();
        let mut stream = StreamConverter::new(Options::default(), SequentialIds::default(), OutputFormat::Agui, 1 << 20);
        let mut out = Vec::new();
        let mut rest = &body[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].min(rest.len());
            stream.feed_sse(&rest[..n], None, &mut out).unwrap();
            rest = &rest[n..];
            i += 1;
        }
        stream.finish(StreamEnd::Eof, None, &mut out).unwrap();
        prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&whole));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    /// The fast reader (taken for plain-text chunks when input arrives as
    /// bytes) and the lenient reader (always taken for parsed values) must
    /// produce the same events.
    #[test]
    fn fast_and_lenient_readers_agree(items in prop::collection::vec(prop_oneof![
        3 => plain_chunk(), 1 => item(),
    ], 0..14)) {
        let lenient = convert_items(&items, StreamEnd::Eof);
        let mut converter = Converter::with_sequential_ids(Options::default());
        let mut out: Vec<Event> = Vec::new();
        for item in &items {
            converter.push_json(item.to_string().as_bytes(), &mut out);
        }
        converter.finish(StreamEnd::Eof, &mut out);
        let via_bytes: Vec<Value> = out.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        prop_assert_eq!(via_bytes, lenient);
    }
}

/// Items the fast reader takes: plain-text artifact chunks and agent
/// messages, in every envelope, with and without descriptions.
fn plain_chunk() -> impl Strategy<Value = Value> {
    let parts = prop::collection::vec(
        (text(), 0..3u8).prop_map(|(t, kinded)| match kinded {
            1 => json!({ "kind": "text", "text": t, "metadata": { "chunkIndex": 1.0 } }),
            // Usage is read by the lenient reader only: the fast one must leave it.
            2 => json!({ "kind": "text", "text": t, "metadata": { "usage": { "inputTokens": 3, "outputTokens": 2 } } }),
            _ => json!({ "text": t }),
        }),
        0..3,
    );
    (small_id(), parts, any::<bool>(), any::<bool>(), 0..4u8, 0..4u8).prop_map(|(id, parts, append, last, shape, described)| {
        let mut artifact = json!({ "artifactId": id, "parts": parts.clone() });
        match described {
            1 => { artifact["name"] = json!("answer"); artifact["metadata"] = json!({ "kind": "llm-text" }); }
            2 => { artifact["name"] = json!(id.clone() + "!"); artifact["description"] = json!(""); }
            3 => artifact["metadata"] = json!({ "model": "m", "token_usage": { "prompt_tokens": 5 } }),
            _ => {}
        }
        let mut update = json!({ "taskId": "t1", "contextId": "c1", "artifact": artifact, "append": append, "lastChunk": last });
        match described {
            1 => update["metadata"] = json!({}),
            2 => update["metadata"] = json!({ "partial": true }),
            _ => {}
        }
        let message = json!({ "messageId": id, "role": "agent", "parts": parts });
        match shape {
            0 => { let mut u = update; u["kind"] = json!("artifact-update"); json!({ "jsonrpc": "2.0", "id": 1, "result": u }) }
            1 => json!({ "jsonrpc": "2.0", "id": 1, "result": { "artifactUpdate": update } }),
            2 => { let mut m = message; m["kind"] = json!("message"); m }
            _ => json!({ "message": message }),
        }
    })
}

#[test]
fn the_checker_itself_rejects_broken_runs() {
    let ok = [
        json!({"type":"RUN_STARTED","threadId":"t","runId":"r"}),
        json!({"type":"RUN_FINISHED","threadId":"t","runId":"r"}),
    ];
    assert!(check_sequence(&ok).is_ok());
    let open_text = [
        json!({"type":"RUN_STARTED","threadId":"t","runId":"r"}),
        json!({"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}),
        json!({"type":"RUN_FINISHED","threadId":"t","runId":"r"}),
    ];
    assert!(check_sequence(&open_text).is_err());
    let bad_args = [
        json!({"type":"RUN_STARTED","threadId":"t","runId":"r"}),
        json!({"type":"TOOL_CALL_START","toolCallId":"x","toolCallName":"n"}),
        json!({"type":"TOOL_CALL_ARGS","toolCallId":"x","delta":"{"}),
        json!({"type":"TOOL_CALL_END","toolCallId":"x"}),
        json!({"type":"RUN_ERROR","message":"m"}),
    ];
    assert!(check_sequence(&bad_args).is_err());
    let no_terminal = [json!({"type":"RUN_STARTED","threadId":"t","runId":"r"})];
    assert!(check_sequence(&no_terminal).is_err());
}

// ---------------------------------------------------------------------------
// Re-attaching after the upstream broke (issue 13): whatever the cut, the
// snapshot and the overlap, every chunk is shown once, in order.

fn reattach_task(parts: &[String], state: &str) -> Value {
    let parts: Vec<Value> = parts
        .iter()
        .map(|t| json!({ "kind": "text", "text": t }))
        .collect();
    json!({ "kind": "task", "id": "t", "contextId": "c", "status": { "state": state },
        "artifacts": [{ "artifactId": "a", "name": "answer", "parts": parts }] })
}

fn reattach_chunk(i: usize, text: &str) -> Value {
    json!({ "kind": "artifact-update", "taskId": "t", "contextId": "c", "append": i > 0,
        "artifact": { "artifactId": "a", "name": "answer", "parts": [{ "kind": "text", "text": text }] } })
}

/// The run ended at the end of input: a valid run that finished, and the
/// text it showed.
fn finished_text(
    mut converter: Converter<a2a_agui::SequentialIds>,
    mut out: Vec<Event>,
) -> Result<String, TestCaseError> {
    converter.finish(StreamEnd::Eof, &mut out);
    let events: Vec<Value> = out
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    check_sequence(&events).map_err(TestCaseError::fail)?;
    prop_assert_eq!(&events.last().unwrap()["type"], "RUN_FINISHED");
    Ok(events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect())
}

/// How an agent's store keeps an artifact that was streamed in chunks.
#[derive(Debug, Clone, Copy)]
enum Stored {
    /// One part per chunk (a2a-sdk's and a2a-js's appends).
    PartPerChunk,
    /// One part holding the whole text (a closing chunk that replaced the
    /// artifact, or a store that merges text).
    Whole,
    /// The whole text split in parts other than the chunks.
    Resplit,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    /// Issue 24: `count` chunks stream; the connection breaks after `cut`
    /// of them and, by the time the caller re-attaches, the task has
    /// ended: the resubscribe is refused, the task read holds the whole
    /// answer (stored as `stored` says). The client sees every chunk once.
    #[test]
    fn a_task_that_ended_before_the_re_attach_shows_the_rest_once(
        count in 1usize..16,
        cut in 0usize..16,
        stored in prop_oneof![Just(Stored::PartPerChunk), Just(Stored::Whole), Just(Stored::Resplit)],
        split in 1usize..8,
        held in prop::option::of(0usize..16),
    ) {
        let chunks: Vec<String> = (0..count).map(|i| format!("w{i} ")).collect();
        let cut = cut.min(count);
        let mut converter = Converter::with_sequential_ids(Options::default());
        let mut out = Vec::new();
        converter.push_value(&reattach_task(&[], "working"), &mut out);
        for (i, text) in chunks.iter().enumerate().take(cut) {
            converter.push_value(&reattach_chunk(i, text), &mut out);
        }
        converter.reattach();
        // An earlier attempt read the task while it still worked: the
        // parts it had beyond those shown are held.
        if let Some(read) = held {
            converter.push_value(&reattach_task(&chunks[..read.clamp(cut, count)], "working"), &mut out);
        }
        let whole = chunks.concat();
        let parts: Vec<String> = match stored {
            Stored::PartPerChunk => chunks.clone(),
            Stored::Whole => vec![whole.clone()],
            Stored::Resplit => whole
                .as_bytes()
                .chunks(split)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect(),
        };
        converter.push_value(&reattach_task(&parts, "completed"), &mut out);
        prop_assert_eq!(finished_text(converter, out)?, whole);
    }

    /// `count` chunks stream; the connection breaks after `cut` of them.
    /// The agent taps the task's events for the new stream from chunk
    /// `tap` on, then reads the task: the stream opens with a snapshot of
    /// `in_stream` chunks (none from a2a-sdk 0.3). The caller reads the task
    /// once the stream's first event came (a snapshot of `read` chunks, the
    /// newest), feeds it, then the stream. Snapshots may overlap the live
    /// events, never leave a gap. An a2a-sdk 0.3 store (`doubled`) holds
    /// every chunk after the tap twice and the stream opens with none.
    #[test]
    fn a_reattached_stream_shows_every_chunk_once(
        count in 1usize..24,
        cut in 0usize..24,
        tap in 0usize..24,
        in_stream in 0usize..24,
        read in 0usize..24,
        stream_snapshot in any::<bool>(),
        doubled in any::<bool>(),
    ) {
        let chunks: Vec<String> = (0..count).map(|i| format!("w{i} ")).collect();
        let cut = cut.min(count);
        let tap = tap.clamp(cut, count);
        let in_stream = in_stream.clamp(tap, count);
        let read = read.clamp(in_stream, count);
        let mut converter = Converter::with_sequential_ids(Options::default());
        let mut out = Vec::new();
        converter.push_value(&reattach_task(&[], "working"), &mut out);
        for (i, text) in chunks.iter().enumerate().take(cut) {
            converter.push_value(&reattach_chunk(i, text), &mut out);
        }
        prop_assert_eq!(converter.reattach_task(), Some("t"));
        converter.reattach();
        let stored: Vec<String> = if doubled {
            chunks[..tap]
                .iter()
                .chain(chunks[tap..read].iter().flat_map(|c| [c, c]))
                .cloned()
                .collect()
        } else {
            chunks[..read].to_vec()
        };
        converter.push_value(&reattach_task(&stored, "working"), &mut out);
        if stream_snapshot && !doubled {
            converter.push_value(&reattach_task(&chunks[..in_stream], "working"), &mut out);
        }
        let live = tap;
        for (i, text) in chunks.iter().enumerate().skip(live) {
            converter.push_value(&reattach_chunk(i, text), &mut out);
        }
        converter.push_value(&json!({ "kind": "status-update", "taskId": "t", "contextId": "c",
            "status": { "state": "completed" }, "final": true }), &mut out);
        prop_assert_eq!(finished_text(converter, out)?, chunks.concat());
    }
}
