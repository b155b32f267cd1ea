//! Every body recorded from the real A2A servers in `tests/agents`
//! (a2a-sdk 1.3.0 and 0.3.26, @a2a-js/sdk 1.3.0; JSON-RPC and REST; 0.3 and
//! 1.0) converts to a valid run that ends the way its scenario ends.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::Path;

use a2a_agui::{Options, OutputFormat, convert_recording};
use common::{check_sequence, parse_agui_body};
use serde_json::Value;

/// What the last event must be for a recording of this scenario.
fn expected_end(scenario: &str) -> (&'static str, Option<&'static str>) {
    match scenario {
        "fail" => ("RUN_ERROR", None),
        "cancel-me" => ("RUN_FINISHED", Some("canceled")),
        "input-required" => ("RUN_FINISHED", Some("input-required")),
        "message-only" => ("RUN_FINISHED", None),
        _ => ("RUN_FINISHED", Some("completed")),
    }
}

#[test]
fn every_real_recording_converts_to_a_valid_run_with_the_scenario_s_ending() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/recordings");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("sse") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        // <agent>-<dialect>-<scenario>, the agent name holding one dash.
        let scenario = name.splitn(4, '-').nth(3).unwrap();
        let body = std::fs::read(&path).unwrap();
        let out = convert_recording(&body, Options::default(), OutputFormat::Agui).unwrap();
        let events = parse_agui_body(&out).unwrap();
        check_sequence(&events).unwrap_or_else(|e| panic!("{name}: {e}"));
        let last = events.last().unwrap();
        let (kind, state) = expected_end(scenario);
        assert_eq!(last["type"], kind, "{name}: {last}");
        if let Some(state) = state {
            assert_eq!(last["result"]["state"], state, "{name}: {last}");
        }
        if kind == "RUN_ERROR" {
            assert_eq!(last["code"], "A2A_TASK_FAILED", "{name}");
            assert_eq!(last["message"], "Boom.", "{name}");
        }
        let text: String = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        if scenario == "commands" {
            let commands: Vec<&Value> = events
                .iter()
                .filter(|e| e["name"] == "a2a.commands")
                .collect();
            assert_eq!(commands.len(), 1, "{name}: commands once");
            assert_eq!(commands[0]["value"][0]["name"], "VOLUME_SET", "{name}");
        }
        if scenario == "chunks" || scenario == "message-only" {
            assert!(!text.is_empty(), "{name}: no text");
        }
        checked += 1;
    }
    assert!(
        checked >= 60,
        "only {checked} recordings found in {}",
        dir.display()
    );
}

/// Issue 26: the frameworks nobody tuned the converter for, as their own
/// A2A servers streamed the `weather` scenario (`tests/frameworks`). What
/// is on the wire renders right: the answer once, the thought as
/// reasoning, the call by name with its arguments and its result; the run
/// finishes.
#[test]
fn frameworks_nobody_tuned_for_render_right() {
    // (recording, the thought is on the wire, the call, its result)
    let cases = [
        ("beeai-default-weather", false, false, false),
        ("beeai-trajectory-weather", true, true, true),
        ("agno-weather", false, true, false),
        ("voltagent-weather", false, false, false),
        ("mastra-weather", false, true, true),
        ("praisonai-weather", false, false, false),
        ("kagent-default-weather", true, true, true),
        ("kagent-stream-weather", true, true, true),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/frameworks/recordings");
    for (name, thought, call, result) in cases {
        let body = std::fs::read(dir.join(format!("{name}.sse"))).unwrap();
        let out = convert_recording(&body, Options::default(), OutputFormat::Agui).unwrap();
        let events = parse_agui_body(&out).unwrap();
        check_sequence(&events).unwrap_or_else(|e| panic!("{name}: {e}"));
        let of =
            |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
        let joined = |kind: &str| -> String {
            of(kind)
                .iter()
                .filter_map(|e| e["delta"].as_str())
                .collect()
        };
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{name}");
        let text = joined("TEXT_MESSAGE_CONTENT");
        assert_eq!(
            text.matches("It is 21C in Paris.").count(),
            1,
            "{name}: {text:?}"
        );
        let reasoning = joined("REASONING_MESSAGE_CONTENT");
        let expected = if thought {
            "I should look up the weather."
        } else {
            ""
        };
        assert_eq!(reasoning, expected, "{name}");
        assert!(
            !text.contains("I should look"),
            "{name}: the thought shown as text"
        );
        let starts = of("TOOL_CALL_START");
        assert!(
            starts.iter().all(|s| s["toolCallName"] == "get_weather"),
            "{name}: {starts:?}"
        );
        assert_eq!(starts.len(), usize::from(call), "{name}: {starts:?}");
        if call {
            let args: Value = serde_json::from_str(&joined("TOOL_CALL_ARGS")).unwrap();
            assert_eq!(args, serde_json::json!({"city": "Paris"}), "{name}");
        }
        let results = of("TOOL_CALL_RESULT");
        assert_eq!(results.len(), usize::from(result), "{name}: {results:?}");
        if let Some(result) = results.first() {
            let content = result["content"].as_str().unwrap();
            assert!(content.contains("21C"), "{name}: {content}");
            assert_eq!(result["toolCallId"], starts[0]["toolCallId"], "{name}");
        }
    }
}
