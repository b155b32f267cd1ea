#!/usr/bin/env bash
# Runs the examples' tests (examples/*/test.mjs) against the built gateway:
#   examples/browser     @ag-ui/client 1.0.0's HttpAgent in a page, in headless
#                        Chromium (/usr/bin/chromium), across origins, CORS
#                        with credentials
#   examples/copilotkit  a React page (<CopilotChat>, @copilotkit/react-core
#                        1.74.0) on the gateway's /copilotkit, no runtime, in
#                        headless Chromium: frontend tool, reload, a second
#                        replica on the same Redis (redis-server)
#   examples/copilotkit/runtime
#                        the CopilotKit runtime 1.75.0 in front of the gateway,
#                        driven by CopilotKitCore; named agents and API keys
# Installs each example's npm packages first, pinned (scripts/lib/pinned.sh:
# `npm ci` from its package-lock.json, skipped when up to date).
#
#   scripts/examples.sh [--verbose]
#
# The gateway binary is target/debug/agui-gateway (`cargo build`), or
# $AGUI_GATEWAY_BIN. Each test is bounded (timeout 180 s). Prints
# `examples: N passed, N failed`; exits non-zero when any failed.
# Non-interactive; loopback only.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

log() { printf 'examples: %s\n' "$*"; }
# shellcheck source=lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"

verbose=()
[[ "${1:-}" == "--verbose" ]] && verbose=(--verbose)

export AGUI_GATEWAY_BIN="${AGUI_GATEWAY_BIN:-$ROOT/target/debug/agui-gateway}"
export COPILOTKIT_TELEMETRY_DISABLED=true DO_NOT_TRACK=1

passed=0
failed=0
failures=()
run() {
    local name=$1
    shift
    printf '\n--> %s\n' "$name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
}

if [[ ! -x "$AGUI_GATEWAY_BIN" ]]; then
    log "no gateway binary at $AGUI_GATEWAY_BIN (run cargo build, or set AGUI_GATEWAY_BIN)"
    printf 'examples: 0 passed, 3 failed\n'
    exit 1
fi

install_and_test() {
    local dir=$1
    shift
    npm_ci_pinned "$ROOT/examples/$dir" || return 1
    (cd "$ROOT/examples/$dir" && timeout 180 node test.mjs "${verbose[@]}" "$@" </dev/null)
}

if command -v "${CHROMIUM:-/usr/bin/chromium}" >/dev/null 2>&1; then
    run "browser: @ag-ui/client 1.0.0 in headless Chromium" install_and_test browser
    if command -v "${REDIS_SERVER:-redis-server}" >/dev/null 2>&1; then
        run "copilotkit: <CopilotChat> on /copilotkit in headless Chromium, two replicas" install_and_test copilotkit
    else
        log "redis-server not found (bash scripts/apt-install.sh redis-server=redis-server)"
        failed=$((failed + 1))
        failures+=("copilotkit: redis-server missing")
    fi
else
    log "chromium not found (bash scripts/apt-install.sh chromium=chromium)"
    failed=$((failed + 2))
    failures+=("browser: chromium missing" "copilotkit: chromium missing")
fi
run "copilotkit/runtime: CopilotKit runtime 1.75.0 + CopilotKitCore" install_and_test copilotkit/runtime

printf '\n'
for name in "${failures[@]}"; do
    printf 'FAILED: %s\n' "$name"
done
printf 'examples: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
