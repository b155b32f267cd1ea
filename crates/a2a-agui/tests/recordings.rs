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
