#!/usr/bin/env bash
# HTTP/2 lifts the browser's six-connection limit: installs playwright-core
# (pinned, tests/browser-h2/node_modules, no browser download; Debian's
# chromium is used), starts the gateway's demo twice on free loopback ports,
# once with --tls (HTTP/2 by ALPN) and once in clear text (HTTP/1.1 for a
# browser), runs test.mjs against both and stops them.
#
#   bash tests/browser-h2/run.sh
#   GATEWAY_BIN=path/to/agui-gateway bash tests/browser-h2/run.sh
#
# BROWSER_H2_DELAY_MS (300) is the demo agent's pause between events: long
# enough that a run streams for about 3 s, so queued runs cannot hide behind
# short ones. Every wait is bounded; the whole test too (BROWSER_H2_TIMEOUT,
# 180 s).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"

log() { printf 'browser-h2: %s\n' "$*"; }

# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
npm_ci_pinned "$HERE"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    bash "$ROOT/scripts/apt-install.sh" chromium=chromium
fi

BIN=${GATEWAY_BIN:-${AGUI_GATEWAY_BIN:-target/debug/agui-gateway}}
if [ ! -x "$BIN" ]; then
    log "no gateway binary at $BIN (cargo build first)"
    exit 1
fi
DELAY_MS=${BROWSER_H2_DELAY_MS:-300}

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
    # The TLS demo removes its certificate folder (agui-gateway-demo-tls-PID)
    # when it exits, but not when killed before its drain ends: then here.
    local tls_dir
    tls_dir=$(grep -m1 -o '/[^ ]*/agui-gateway-demo-tls-[0-9]*/cert.pem' "$work/h2.log" 2>/dev/null || true)
    [ -n "$tls_dir" ] && rm -rf "$(dirname "$tls_dir")"
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for LOG PATTERN PID: waits (30 s at most) until PATTERN is in LOG,
# failing early if the process exits.
wait_for() {
    local file=$1 pattern=$2 pid=$3
    for _ in $(seq 300); do
        grep -q -- "$pattern" "$file" 2>/dev/null && return 0
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
# The base URL from the "listening on" line: the port the kernel chose for :0.
listening_url() { grep -m1 'agui-gateway listening on' "$1" | grep -o 'https\?://[^ ]*' | head -n1; }

"$BIN" demo --tls --listen 127.0.0.1:0 --delay-ms "$DELAY_MS" >"$work/h2.log" 2>&1 &
pids+=($!)
# The certificate is printed after the URL; the whole PEM block is wanted.
wait_for "$work/h2.log" "END CERTIFICATE" "${pids[-1]}"
h2_url=$(listening_url "$work/h2.log")
sed -n '/-----BEGIN CERTIFICATE-----/,/-----END CERTIFICATE-----/p' "$work/h2.log" >"$work/cert.pem"
log "gateway demo over TLS on $h2_url"

"$BIN" demo --listen 127.0.0.1:0 --delay-ms "$DELAY_MS" >"$work/h1.log" 2>&1 &
pids+=($!)
wait_for "$work/h1.log" "agui-gateway listening on" "${pids[-1]}"
h1_url=$(listening_url "$work/h1.log")
log "gateway demo in clear text on $h1_url"

status=0
timeout --kill-after=10 "${BROWSER_H2_TIMEOUT:-180}" \
    node "$HERE/test.mjs" --h2 "$h2_url" --cert "$work/cert.pem" --h1 "$h1_url" || status=$?
if [ "$status" -ne 0 ]; then
    log "failed ($status); the gateways' logs:"
    tail -n 20 "$work/h2.log" "$work/h1.log" >&2
fi
exit "$status"
