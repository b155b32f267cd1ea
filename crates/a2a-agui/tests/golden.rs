//! Golden tests: each folder of `tests/golden/` holds a recorded upstream
//! body (`input.sse`, `input.jsonl` or `input.json`), a `case.json` saying
//! what it shows and which options to convert with, and the full expected
//! output in both dialects. `UPDATE_GOLDEN=1` rewrites the expected files.

#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

use std::fs;
use std::path::{Path, PathBuf};

use a2a_agui::{AguiVersion, Options, OutputFormat, convert_recording};
use serde_json::Value;

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

fn input_of(dir: &Path) -> Option<PathBuf> {
    ["input.sse", "input.jsonl", "input.json"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.exists())
}

fn options_of(case: &Value) -> Options {
    let text = |key: &str| case.get(key).and_then(Value::as_str).map(str::to_owned);
    Options {
        thread_id: text("threadId"),
        run_id: text("runId"),
        interrupts: case
            .get("interrupts")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        version: AguiVersion::parse(case.get("protocolVersion").and_then(Value::as_str)),
        client_tools: case
            .get("clientTools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        state: case.get("state").cloned(),
    }
}

#[test]
fn every_golden_case_converts_to_its_expected_output() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut dirs: Vec<PathBuf> = fs::read_dir(golden_root())
        .expect("tests/golden exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 50,
        "expected the full golden suite, found {}",
        dirs.len()
    );

    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let case: Value =
            serde_json::from_slice(&fs::read(dir.join("case.json")).expect("case.json"))
                .expect("case.json is JSON");
        let input = fs::read(input_of(dir).expect("an input file")).expect("readable input");
        for (dialect, file) in [
            (OutputFormat::Agui, "expected.agui.sse"),
            (OutputFormat::Hector, "expected.hector.sse"),
        ] {
            let actual = convert_recording(&input, options_of(&case), dialect).expect("encodes");
            let path = dir.join(file);
            if update {
                fs::write(&path, &actual).expect("writable golden");
                continue;
            }
            let expected = fs::read(&path).unwrap_or_default();
            if expected != actual {
                failures.push(format!(
                    "{name}/{file} differs:\n--- expected\n{}\n--- actual\n{}",
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&actual)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
