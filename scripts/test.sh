#!/usr/bin/env bash
# The one test command (README, .ci/run). Installs everything the tests need,
# pinned, into git-ignored caches (.cache/, node_modules/), then runs every
# tier (docs/tests.md): lints; tier 1, the hermetic `cargo test --workspace`
# (unit, golden, property, in-process and fake-agent tests, the fuzz
# corpora); tier 2, the tests `#[ignore]`d for their real peers (A2A agents,
# frameworks, redis-server, the conformance matrix); the real AG-UI clients
# and validator over the golden outputs, the inspector and the examples in
# headless Chromium, the real A2A agents' smoke test and differentials, and
# a build of the benchmarks (built so they cannot rot, never timed).
# Instrumented fuzzing is its own command (scripts/fuzz.sh).
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
    # Where the time goes: CI has a budget (docs/tests.md), and every step counts.
    timings+=("$(printf '%5ds  %s' $((SECONDS - started)) "$name")")
}

recordings=$(mktemp -d)
logs=$(mktemp -d)
trap 'rm -rf "$recordings" "$logs"' EXIT

# Clippy's lints run inside the debug build, not as a check build of their
# own: clippy-driver is rustc plus the lints, so as the workspace's crates'
# compiler (the third-party crates are compiled by rustc as ever) the one
# build both lints with `-D warnings` and makes the test binaries. This is
# what `cargo clippy -- -D warnings` sets up (the same two variables), on a
# build instead of a check, and saves the ~5 minutes a separate check build
# of every crate took. Exported for every cargo run below, so none rebuilds
# for a different compiler; scripts/fuzz.sh clears them for its own build.
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS

# Work that waits on downloads or on idle cores starts now, in the
# background, and its step waits for it and prints its log:
# - the one build of the workspace (the lints, every test binary, the
#   benchmarks);
# - every install, side by side (each into its own directory; they wait on
#   the registries far more than on the cores): the AG-UI clients and
#   validator, the real A2A agents, the CopilotKit runtime, the OAuth2
#   server, Debian's redis-server and chromium, the thirteen frameworks, and
#   the pages' node packages and the deploy checks' venv.
declare -A pids
background() {
    local name=$1
    shift
    "$@" >"$logs/$name.log" 2>&1 </dev/null &
    pids[$name]=$!
}
waited() {
    local name=$1 status=0
    wait "${pids[$name]}" || status=$?
    cat "$logs/$name.log"
    return "$status"
}
pages() {
    log() { printf 'pages: %s\n' "$*"; }
    # shellcheck source=lib/pinned.sh
    source scripts/lib/pinned.sh
    local dir status=0
    for dir in tests/inspector tests/browser-h2 examples/browser examples/copilotkit examples/copilotkit/runtime; do
        npm_ci_pinned "$PWD/$dir" || status=1
    done
    pinned_venv "$PWD/.cache/venv-deploy" "$PWD/deploy/requirements.txt" || status=1
    return "$status"
}
background build cargo build --workspace --all-targets --locked
# The installs at nice 19: what they need of the cores (unpacking wheels and
# node packages) goes to them only when the build and tier 1, which start
# first and watch the clock, leave a core idle.
background clients nice -n 19 tests/conformance/setup.sh
background agents nice -n 19 bash tests/agents/setup.sh
background copilotkit nice -n 19 bash tests/copilotkit/setup.sh
background authz nice -n 19 bash tests/authz/setup.sh
# One apt-get update for both.
background apt nice -n 19 bash scripts/apt-install.sh redis-server=redis-server chromium=chromium
background frameworks nice -n 19 bash tests/frameworks/setup.sh
background pages nice -n 19 bash -c "$(declare -f pages); pages"

step "cargo fmt --check" cargo fmt --all -- --check
step "module graphs have no cycle" python3 scripts/module_graph.py --quiet
step "size limits (600 lines a file, 14 entries a crate's src/)" python3 scripts/limits.py
step "cargo build of every target with clippy's lints, -D warnings (in the background since the start)" \
    waited build
# Tier 1 needs nothing installed: it starts while the installs finish.
step "tier 1: cargo test --workspace (hermetic: Rust only)" cargo test --workspace --locked
step "install: AG-UI clients and validator" waited clients
step "install: real A2A agents" waited agents
step "install: CopilotKit runtime 1.75.0" waited copilotkit
step "install: OAuth2 authorization server (oidc-provider 9.13.3)" waited authz
step "install: redis-server (the shared journal) and chromium (the browser tests), Debian's" \
    waited apt
step "install: the pages' node packages (inspector, browser, examples) and the deploy checks' venv" \
    waited pages
step "real clients over the golden outputs" tests/conformance/check-recordings.sh tests/golden
step "A2UI activity parity with @ag-ui/a2a" node tests/conformance/node/a2ui-parity.mjs tests/golden/a2ui-v0.8-and-v0.9-surfaces
step "conformance harness self-test" tests/conformance/selftest.sh
step "deploy/ checks (build context, hadolint, kustomize render, kubernetes-validate, cross-object checks, check-config)" bash deploy/check.sh
step "install: agent frameworks (ADK, fasta2a, Strands, ..., thirteen; in the background since the start)" \
    waited frameworks
step "tier 2: the tests of real peers (agents, redis-server, OAuth2, CopilotKit, a2a-sdk)" \
    cargo test --workspace --locked -- --ignored --skip matrix --skip frameworks
# The conformance matrix and the frameworks run on their own, two tests at a
# time: their node clients and agent servers would otherwise share the two
# cores with the behavioural tests that watch event timing.
step "tier 2: conformance matrix (upstream x client x route x scenario)" \
    cargo test --locked -p agui-gateway --test gateway matrix -- --ignored --test-threads 2
step "tier 2: agent frameworks through the gateway x @ag-ui/client version" \
    cargo test --locked -p agui-gateway --test gateway frameworks -- --ignored --test-threads 2
step "inspector in headless Chromium (the demo run renders)" bash tests/inspector/run.sh
step "HTTP/2 over TLS lifts the browser's six-connection limit (12 runs in headless Chromium)" bash tests/browser-h2/run.sh
step "examples: browser (@ag-ui/client 1.0.0 in headless Chromium) and CopilotKit" bash scripts/examples.sh
step "real A2A agents smoke test" env SKIP_SETUP=1 RECORDINGS_DIR="$recordings" bash tests/agents/smoke.sh
step "a2a-sdk client: direct vs through the gateway" bash tests/conformance/a2a_client_diff.sh
step "a2a-sdk gRPC client: direct vs through the gRPC passthrough" bash tests/conformance/a2a_client_diff.sh --grpc
step "load tools smoke test (not timed)" bash bench/smoke.sh
printf '\nstep times:\n'
printf '  %s\n' "${timings[@]}"
printf 'total: %ds\n\n' "$SECONDS"
for name in "${failures[@]}"; do
    printf 'FAILED: %s\n' "$name"
done
printf 'steps: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
