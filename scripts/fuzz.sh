#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ on the stable toolchain and runs
# each for a bounded time. The coverage instrumentation is what cargo-fuzz
# would add, as plain -C flags (no nightly, no sanitizer).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   scripts/fuzz.sh --build-only
#
# The corpus of each target lives in .cache/fuzz-corpus/<target>
# (git-ignored), seeded from the golden inputs and recordings; a crash is
# saved as fuzz/artifacts/<target>/crash-* and fails the run.
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
    corpus=".cache/fuzz-corpus/$target"
    mkdir -p "$corpus" "fuzz/artifacts/$target"
    if [ -z "$(ls -A "$corpus")" ]; then
        case $target in
        sse_convert)
            # A control byte first: 0x00 reads SSE in one-byte chunks,
            # 0x04 a JSON body (see the target).
            for f in tests/golden/*/input.* tests/frameworks/recordings/*.sse tests/agents/recordings/*.sse; do
                [ -f "$f" ] || continue
                case $f in *.sse) control='\x00' ;; *) control='\x04' ;; esac
                { printf "$control"; head -c 65536 "$f"; } >"$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"
            done
            ;;
        request_readers)
            printf '%s' '{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}' >"$corpus/run"
            printf '%s' '{"request":{"role":"user","parts":[{"text":"Hello"}]}}' >"$corpus/seed"
            printf '%s' '{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"role":"user","parts":[{"kind":"text","text":"x"}],"messageId":"m"}}}' >"$corpus/rpc"
            ;;
        grpc_wire)
            # A card with a gRPC interface and a signature (0x84: a 1.0 card, the
            # gateway has a gRPC address), a stream item, a status.
            printf '\x84\x0a\x04dice\x1a\x19\x0a\x0f10.0.0.7:50051\x12\x04GRPC\x6a\x02\x0a\x00' >"$corpus/card"
            printf '\x02\x22\x0c\x0a\x01t\x1a\x07\x0a\x01a\x22\x02\x0a\x00' >"$corpus/item"
            printf '\x05TaskNotFoundError: no such task' >"$corpus/status"
            ;;
        upstream_url)
            printf '\x00/v1/message:stream' >"$corpus/rest"
            printf '\x00/%%2e%%2e/x' >"$corpus/dots"
            printf '\x01/http://other/x' >"$corpus/scheme"
            ;;
        esac
    fi
    printf '\n==> fuzz %s for %s s\n' "$target" "$seconds"
    "$CARGO_TARGET_DIR/$host/release/$target" "$corpus" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 2>&1 |
        grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|thread|panicked|Running|INFO: Seed)|ERROR' || true
    if [ -n "$(ls -A "fuzz/artifacts/$target")" ]; then
        echo "FAILED: $target found a failing input (fuzz/artifacts/$target/)"
        exit 1
    fi
done
