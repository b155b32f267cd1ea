#!/usr/bin/env bash
# The inspector page in headless Chromium: installs playwright-core (pinned,
# tests/inspector/node_modules, no browser download; Debian's chromium is
# used), starts the gateway's demo on a free loopback port, runs test.mjs
# against its /inspect and stops it. The screenshot of the demo run goes to a
# temporary file; INSPECTOR_SCREENSHOT=docs/screenshots/inspector.png refreshes
# the committed one.
#
#   bash tests/inspector/run.sh
#   GATEWAY_BIN=path/to/agui-gateway bash tests/inspector/run.sh
#   INSPECTOR_DEV=1 bash tests/inspector/run.sh   # the page from the source
#       folder (dev-server.mjs in front of the gateway): no rebuild needed
#
# Every wait is bounded; the whole test too (INSPECTOR_TIMEOUT, 300 s).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"

log() { printf 'inspector: %s\n' "$*"; }

# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
npm_ci_pinned "$HERE"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    bash "$ROOT/scripts/apt-install.sh" chromium=chromium
fi

BIN=${GATEWAY_BIN:-target/debug/agui-gateway}
if [ ! -x "$BIN" ]; then
    log "no gateway binary at $BIN (cargo build first)"
    exit 1
fi

work=$(mktemp -d)
pids=()
# The demo drains open streams for 10 s on SIGTERM; the test is over by
# then, so after 2 s it is killed.
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for _ in $(seq 20); do
        local alive=0
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        [ "$alive" -eq 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for_line LOG PATTERN PID: the URL the process printed, within 30 s.
wait_for_line() {
    local file=$1 pattern=$2 pid=$3 line
    for _ in $(seq 300); do
        line=$(grep -m1 "$pattern" "$file" 2>/dev/null || true)
        if [ -n "$line" ]; then
            grep -o 'http://[^ ]*' <<<"$line" | head -n1
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            log "$pattern: the process exited"
            cat "$file" >&2
            return 1
        fi
        sleep 0.1
    done
    log "$pattern: not seen within 30 s"
    cat "$file" >&2
    return 1
}

"$BIN" demo --listen 127.0.0.1:0 --delay-ms 5 >"$work/gateway.log" 2>&1 &
pids+=($!)
url=$(wait_for_line "$work/gateway.log" "agui-gateway listening on" "${pids[-1]}")
log "gateway demo on $url"

if [ "${INSPECTOR_DEV:-0}" = 1 ]; then
    node "$HERE/dev-server.mjs" --gateway "$url" --listen 127.0.0.1:0 >"$work/dev.log" 2>&1 &
    pids+=($!)
    url=$(wait_for_line "$work/dev.log" "inspector dev server listening on" "${pids[-1]}")
    log "the page from the source folder, on $url"
fi

status=0
timeout --kill-after=10 "${INSPECTOR_TIMEOUT:-300}" node "$HERE/test.mjs" "$url" || status=$?
if [ "$status" -ne 0 ]; then
    log "failed ($status); the gateway's log:"
    tail -n 40 "$work/gateway.log" >&2
fi
exit "$status"
