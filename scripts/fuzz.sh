#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ on the stable toolchain and runs
# each for a bounded time. The coverage instrumentation is what cargo-fuzz
# would add, as plain -C flags (no nightly, no sanitizer).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   scripts/fuzz.sh --build-only
#
# Not part of the test command: the checks behind the targets
# (fuzz/checks/) run over the committed corpus (fuzz/corpus/) as ordinary
# tier-1 tests. What a run finds goes to .cache/fuzz-corpus/<target>
# (git-ignored); a crash is saved as fuzz/artifacts/<target>/crash-* and
# fails the run (docs/fuzzing.md says how a finding becomes a test).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_only=false
if [ "${1:-}" = "--build-only" ]; then
    build_only=true
    shift
fi
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(upstream_url sse_convert request_readers grpc_wire)

export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
export CARGO_TARGET_DIR="$PWD/.cache/fuzz-target"
# scripts/test.sh lints through clippy-driver as the workspace's compiler;
# the instrumented build is rustc's alone.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros,
# which must not be instrumented (nothing would link them to libFuzzer).
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --manifest-path fuzz/Cargo.toml --release --locked --bins --target "$host"
if $build_only; then exit 0; fi

for target in "${targets[@]}"; do
    # Two corpus directories: libFuzzer writes what it finds to the first
    # (git-ignored, it grows run after run) and reads the second, the
    # committed corpus the tier-1 tests replay (fuzz_corpora.rs).
    corpus=".cache/fuzz-corpus/$target"
    mkdir -p "$corpus" "fuzz/artifacts/$target"
    if [ "$target" = sse_convert ] && [ -z "$(ls -A "$corpus")" ]; then
        # Today's goldens and recordings, which the committed corpus may
        # predate. A control byte first: 0x00 reads SSE in one-byte
        # chunks, 0x04 a JSON body (see fuzz/checks/sse_convert.rs).
        for f in tests/golden/*/input.* tests/frameworks/recordings/*.sse tests/agents/recordings/*.sse; do
            [ -f "$f" ] || continue
            case $f in *.sse) control='\x00' ;; *) control='\x04' ;; esac
            { printf "$control"; head -c 65536 "$f"; } >"$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"
        done
    fi
    printf '\n==> fuzz %s for %s s\n' "$target" "$seconds"
    "$CARGO_TARGET_DIR/$host/release/$target" "$corpus" "fuzz/corpus/$target" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 2>&1 |
        grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|thread|panicked|Running|INFO: Seed)|ERROR' || true
    if [ -n "$(ls -A "fuzz/artifacts/$target")" ]; then
        echo "FAILED: $target found a failing input (fuzz/artifacts/$target/)"
        exit 1
    fi
done
