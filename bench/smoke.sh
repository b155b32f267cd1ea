#!/usr/bin/env bash
# Proves the load tools still work (fake upstream -> gateway -> loadgen, and
# direct; HTTP/2 by prior knowledge; the gateway on TLS with HTTP/1.1 and
# HTTP/2; the fake agent over gRPC behind the gateway), without timing anything: 20 short streams each, zero errors and
# every event accounted for. Bounded: 60 s per run at most.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${BIN:-target/debug}
# shellcheck source=lib.sh
source bench/lib.sh
"$BIN/fake-agent" > "$WORK/fake.log" 2>&1 & PIDS+=($!)
FAKE=$(wait_line "$WORK/fake.log" 'READY [0-9]+' | cut -d' ' -f2)
"$BIN/agui-gateway" --upstream "http://127.0.0.1:$FAKE/" --listen 127.0.0.1:0 > "$WORK/gw.log" 2>&1 & GW_PID=$!; PIDS+=($GW_PID)
GW=$(wait_line "$WORK/gw.log" '127\.0\.0\.1:[0-9]+' | cut -d: -f2)
passed=0; failed=0
# check NAME LOADGEN-ARGS...: 20 streams of EVENTS (default 10) chunks, INTERVAL ms apart (5).
check() {
    local name=$1; shift
    local out events=${EVENTS:-10}
    out=$("$BIN/loadgen" --streams 20 --message "events=$events interval=${INTERVAL:-5}" --timeout-secs 60 --setup "$name" "$@")
    if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); n=int(sys.argv[2]); sys.exit(0 if d["errors"]==0 and d["streams_ok"]==20 and d["events"]==20*n else 1)' "$out" "$events"; then
        echo "ok $name"; passed=$((passed + 1))
    else
        echo "FAIL $name: $out"; failed=$((failed + 1))
    fi
}
check direct --url "http://127.0.0.1:$FAKE/" --mode a2a
check gateway --url "http://127.0.0.1:$GW/agui" --mode agui --pid "$GW_PID"
check gateway-h2c --url "http://127.0.0.1:$GW/agui" --mode agui --protocol http2 --streams-per-connection 8
# The TLS setups of compare.sh: the gateway terminating TLS, HTTP/1.1 and HTTP/2.
make_tls_certs
"$BIN/agui-gateway" --upstream "http://127.0.0.1:$FAKE/" --listen 127.0.0.1:0 \
    --tls-cert "$WORK/tls.pem" --tls-key "$WORK/tls.key" > "$WORK/gw-tls.log" 2>&1 & PIDS+=($!)
TLS=$(wait_line "$WORK/gw-tls.log" '127\.0\.0\.1:[0-9]+' | cut -d: -f2)
check gateway-tls-h1 --url "https://127.0.0.1:$TLS/agui" --mode agui --ca-file "$WORK/tls-ca.pem"
check gateway-tls-h2 --url "https://127.0.0.1:$TLS/agui" --mode agui --ca-file "$WORK/tls-ca.pem" --protocol http2 --streams-per-connection 8
# The gRPC setup of compare.sh: the same agent over A2A 1.0's gRPC binding.
FAKE_GRPC=$(wait_line "$WORK/fake.log" 'GRPC [0-9]+' | cut -d' ' -f2)
"$BIN/agui-gateway" --upstream "grpc://127.0.0.1:$FAKE_GRPC" --listen 127.0.0.1:0 > "$WORK/gw-grpc.log" 2>&1 & PIDS+=($!)
GRPC=$(wait_line "$WORK/gw-grpc.log" '127\.0\.0\.1:[0-9]+' | cut -d: -f2)
check gateway-grpc --url "http://127.0.0.1:$GRPC/agui" --mode agui
# Small messages back to back on one HTTP/2 connection, faster than the
# gateway reads them: h2 once closed the connection under all the runs.
EVENTS=2000 INTERVAL=0 check gateway-grpc-max --url "http://127.0.0.1:$GRPC/agui" --mode agui
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
