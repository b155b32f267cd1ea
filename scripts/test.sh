#!/usr/bin/env bash
# The one test command (README, .ci/run). Installs everything the tests need,
# pinned, into git-ignored caches (.cache/, node_modules/), then runs every
# test: lints, Rust unit/golden/property/integration tests, the real AG-UI
# clients and validator over the golden outputs, the inspector and the
# examples in headless Chromium, the real A2A agents' smoke test, a build of
# the benchmarks (built so they cannot rot, never timed) and a bounded fuzzing
# run.
# Non-interactive; every step runs even if an earlier one failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

passed=0
failed=0
failures=()
timings=()
step() {
    local name=$1
    shift
    printf '\n==> %s\n' "$name"
    local started=$SECONDS
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
    # Where the time goes: CI has a budget (README), and every step counts.
    timings+=("$(printf '%5ds  %s' $((SECONDS - started)) "$name")")
}

recordings=$(mktemp -d)
frameworks_log=$(mktemp)
trap 'rm -rf "$recordings" "$frameworks_log"' EXIT

# The thirteen frameworks' venvs and node packages take minutes to install,
# mostly waiting on downloads: that runs in the background while the other
# installs, the lints and the build go on, and is waited for before the
# first test (timing-sensitive tests get both cores to themselves).
bash tests/frameworks/setup.sh >"$frameworks_log" 2>&1 </dev/null &
frameworks_setup=$!
frameworks_installed() {
    local status=0
    wait "$frameworks_setup" || status=$?
    cat "$frameworks_log"
    return "$status"
}

step "install: AG-UI clients and validator" tests/conformance/setup.sh
step "install: real A2A agents" bash tests/agents/setup.sh
step "install: CopilotKit runtime 1.75.0" bash tests/copilotkit/setup.sh
step "install: OAuth2 authorization server (oidc-provider 9.13.3)" bash tests/authz/setup.sh
# One apt-get update for both.
step "install: redis-server (the shared journal) and chromium (the browser tests), Debian's" \
    bash scripts/apt-install.sh redis-server=redis-server chromium=chromium
step "cargo fmt --check" cargo fmt --all -- --check
step "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
step "module graphs have no cycle" python3 scripts/module_graph.py --quiet
step "cargo build (binaries, benches)" cargo build --workspace --all-targets --locked
# The conformance matrix runs alone: its node clients would otherwise share
# the two cores with the behavioural tests that watch event timing.
step "install: agent frameworks (ADK, fasta2a, Strands, ..., thirteen; in the background since the start)" \
    frameworks_installed
step "cargo test" cargo test --workspace --locked -- --skip matrix --skip frameworks
step "conformance matrix (upstream x client x route x scenario)" \
    cargo test --locked -p agui-gateway --test gateway matrix -- --test-threads 1
step "agent frameworks through the gateway x @ag-ui/client version" \
    cargo test --locked -p agui-gateway --test gateway frameworks -- --test-threads 1
# Issue 24's findings replayed against the release build, as an attacker
# would meet it (peak memory of the patch bomb, shutdown times, the
# take-over on redis-server); the debug build ran them in "cargo test".
step "hardening replay against the release build" bash -c \
    'cargo build --release --locked -p agui-gateway &&
     AGUI_GATEWAY_BIN="$PWD/target/release/agui-gateway" cargo test --locked -p agui-gateway --test gateway -- \
        hardening keys_not_for_signing json_logs_are_json_from_the_first_line a_failure_to_start_is_a_json_line_too \
        an_idle_gateway_exits a_run_taken_over_after'
step "real clients over the golden outputs" tests/conformance/check-recordings.sh tests/golden
step "A2UI activity parity with @ag-ui/a2a" node tests/conformance/node/a2ui-parity.mjs tests/golden/a2ui-v0.8-and-v0.9-surfaces
step "conformance harness self-test" tests/conformance/selftest.sh
step "inspector in headless Chromium (the demo run renders)" bash tests/inspector/run.sh
step "HTTP/2 over TLS lifts the browser's six-connection limit (12 runs in headless Chromium)" bash tests/browser-h2/run.sh
step "examples: browser (@ag-ui/client 1.0.0 in headless Chromium) and CopilotKit" bash scripts/examples.sh
step "real A2A agents smoke test" env SKIP_SETUP=1 RECORDINGS_DIR="$recordings" bash tests/agents/smoke.sh
step "a2a-sdk client: direct vs through the gateway" bash tests/conformance/a2a_client_diff.sh
step "a2a-sdk gRPC client: direct vs through the gRPC passthrough" bash tests/conformance/a2a_client_diff.sh --grpc
step "load tools smoke test (not timed)" bash bench/smoke.sh
step "deploy/ checks (build context, hadolint, kustomize render, kubernetes-validate, cross-object checks, check-config)" bash deploy/check.sh
# Bounded, and the one step that gives time back: CI stops a run at 30
# minutes, so a run that is late by now fuzzes each target 10 s, not 30.
fuzz_seconds=30
if ((SECONDS > 22 * 60)); then fuzz_seconds=10; fi
step "fuzz targets, $fuzz_seconds s each (URL builder, SSE + converter, request readers, gRPC wire)" \
    bash scripts/fuzz.sh "$fuzz_seconds"

printf '\nstep times:\n'
printf '  %s\n' "${timings[@]}"
printf 'total: %ds\n\n' "$SECONDS"
for name in "${failures[@]}"; do
    printf 'FAILED: %s\n' "$name"
done
printf 'steps: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
