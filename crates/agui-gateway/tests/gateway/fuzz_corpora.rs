//! The fuzz targets' checks (`fuzz/checks/`) over their committed corpora,
//! as ordinary tier-1 tests: every input the coverage-guided runs kept
//! (`fuzz/corpus/<target>/`, minimised with libFuzzer's `-merge=1`) and,
//! for the SSE converter, every golden input and recording of a real
//! agent, read in four ways. What instrumented fuzzing found once stays
//! found without its build (`scripts/fuzz.sh`, `docs/fuzzing.md`).

use std::path::{Path, PathBuf};

use crate::support::repo_root;

#[path = "../../../../fuzz/checks/grpc_wire.rs"]
mod grpc_wire;
#[path = "../../../../fuzz/checks/request_readers.rs"]
mod request_readers;
#[path = "../../../../fuzz/checks/sse_convert.rs"]
mod sse_convert;
#[path = "../../../../fuzz/checks/upstream_url.rs"]
mod upstream_url;

/// The entries of `dir` that `keep` keeps, sorted (a failure names the same
/// input each run).
fn entries(dir: &Path, keep: fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| keep(path))
        .collect();
    entries.sort();
    entries
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    entries(dir, Path::is_file)
}

/// Runs `check` over every input of the target's committed corpus; a
/// panic names the input that caused it.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let corpus = files_in(&repo_root().join("fuzz/corpus").join(target));
    assert!(!corpus.is_empty(), "fuzz/corpus/{target} is empty");
    for path in &corpus {
        let data = std::fs::read(path).expect("a corpus input");
        run_one(target, path, &data, check);
    }
    corpus.len()
}

fn run_one(target: &str, path: &Path, data: &[u8], check: fn(&[u8])) {
    if std::panic::catch_unwind(|| check(data)).is_err() {
        panic!("{target} fails on {}", path.display());
    }
}

#[test]
fn upstream_url_corpus() {
    assert!(replay("upstream_url", upstream_url::check) > 100);
}

#[test]
fn request_readers_corpus() {
    assert!(replay("request_readers", request_readers::check) > 100);
}

#[test]
fn grpc_wire_corpus() {
    assert!(replay("grpc_wire", grpc_wire::check) > 100);
}

#[test]
fn sse_convert_corpus() {
    assert!(replay("sse_convert", sse_convert::check) > 100);
}

/// Every golden input and every recording of a real agent or framework,
/// through the target's first control byte: SSE in one-byte chunks, in
/// 32-byte chunks with interrupts on and a cut at the end, and with a
/// 64-byte event limit; a JSON body as JSON.
#[test]
fn sse_convert_goldens_and_recordings() {
    let root = repo_root();
    let mut inputs = Vec::new();
    for dir in entries(&root.join("tests/golden"), Path::is_dir) {
        inputs.extend(
            files_in(&dir)
                .into_iter()
                .filter(|p| p.file_stem().is_some_and(|s| s == "input")),
        );
    }
    for dir in ["tests/frameworks/recordings", "tests/agents/recordings"] {
        inputs.extend(
            files_in(&root.join(dir))
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "sse")),
        );
    }
    assert!(inputs.len() > 150, "{} inputs", inputs.len());
    for path in &inputs {
        let body = std::fs::read(path).expect("an input");
        let controls: &[u8] = if path.extension().is_some_and(|e| e == "json") {
            &[0x04]
        } else {
            // 0x00: one-byte chunks; 0xF9: 32-byte chunks (bits 3 to 7),
            // interrupts (bit 0), a cut (bit 6); 0x02: a 64-byte event limit.
            &[0x00, 0xF9, 0x02]
        };
        for &control in controls {
            let mut data = Vec::with_capacity(body.len() + 1);
            data.push(control);
            data.extend_from_slice(&body);
            run_one("sse_convert", path, &data, sse_convert::check);
        }
    }
}
