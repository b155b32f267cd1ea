#!/usr/bin/env bash
# The whole comparison, on this machine, in one run: the same fake A2A
# upstream served (1) directly, (2) through agui-gateway converting to AG-UI,
# (3) through nginx as a plain SSE proxy, (4) through the Node alternative
# (@ag-ui/a2a's A2AAgent + @ag-ui/encoder), and (5) the gateway and nginx
# terminating TLS, each over HTTP/1.1 (a connection per stream) and HTTP/2
# (100 streams per connection, as a browser tab multiplexes its runs):
# gateway-tls-h1, gateway-tls-h2, nginx-tls-h1, nginx-tls-h2; and (6) the gateway converting
# the same agent called over A2A 1.0's gRPC binding (gateway-grpc). Writes bench/results/results.json,
# the tables (stdout and bench/results/tables.md) and bench/results/latency.png.
# Every load run is bounded in count (--streams) and time (--timeout-secs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
# OUT: where the results go (an A/B of two builds writes elsewhere).
OUT=${OUT:-"$ROOT/bench/results"}
mkdir -p "$OUT"
SCALES=${SCALES:-"100 1000 8000"}
# Optional: only some setups (SETUPS="gateway nginx"), extra gateway flags
# (GATEWAY_ARGS="--workers 1"), every proxy pinned to one CPU while the
# load generator and the upstream keep both (PIN_CPU=1), and another
# gateway binary (GATEWAY_BIN=/path, for an A/B of two builds).
SETUPS=${SETUPS:-"direct gateway nginx node gateway-tls-h1 gateway-tls-h2 nginx-tls-h1 nginx-tls-h2 gateway-grpc"}
GATEWAY_ARGS=${GATEWAY_ARGS:-}
GATEWAY_BIN=${GATEWAY_BIN:-}
PIN_CPU=${PIN_CPU:-}

bash bench/setup.sh
cargo build --release --locked -p agui-bench -p a2a-fake-agent -p agui-gateway
ulimit -n 20000 2>/dev/null || true
BIN="$ROOT/target/release"
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

"$BIN/fake-agent" > "$WORK/fake.log" 2>&1 & PIDS+=($!)
FAKE=$(wait_line "$WORK/fake.log" 'READY [0-9]+' | cut -d' ' -f2)
FAKE_GRPC=$(wait_line "$WORK/fake.log" 'GRPC [0-9]+' | cut -d' ' -f2)
make_tls_certs

# Every figure comes from fresh proxy processes: each load run starts its
# proxy and stops it after, so no run inherits another's memory or warm
# pools. The gateway runs with its defaults (the memory journal on).
GW_PID="" NGINX_PID="" NGINX_WORKER="" NODE_PID=""
start_proxy() {
    case "$1" in
        gateway*)
            # Started pinned, as a user would, so the runtime sizes itself
            # to the one CPU it sees.
            local pin=()
            if [ -n "$PIN_CPU" ]; then pin=(taskset -c "$PIN_CPU"); fi
            # shellcheck disable=SC2086 # GATEWAY_ARGS is a list of flags
            local tls=()
            case "$1" in *-tls-*) tls=(--tls-cert "$WORK/tls.pem" --tls-key "$WORK/tls.key") ;; esac
            local upstream="http://127.0.0.1:$FAKE/"
            case "$1" in *-grpc*) upstream="grpc://127.0.0.1:$FAKE_GRPC" ;; esac
            "${pin[@]}" "${GATEWAY_BIN:-$BIN/agui-gateway}" --upstream "$upstream" --listen 127.0.0.1:0 "${tls[@]}" $GATEWAY_ARGS > "$WORK/gw.log" 2>&1 & GW_PID=$!; PIDS+=($GW_PID)
            GW=$(wait_line "$WORK/gw.log" '127\.0\.0\.1:[0-9]+' | cut -d: -f2) ;;
        nginx*)
            NGINX=$(free_port)
            local cert="" key=""
            case "$1" in *-tls-*) cert="$WORK/tls.pem" key="$WORK/tls.key" ;; esac
            NGINX_TLS_CERT="$cert" NGINX_TLS_KEY="$key" bash bench/nginx/run.sh "$FAKE" "$NGINX" > "$WORK/nginx.log" 2>&1 & NGINX_PID=$!; PIDS+=($NGINX_PID)
            wait_port "$NGINX"
            NGINX_WORKER=$(pgrep -P "$NGINX_PID" | head -1) ;;
        node*)
            node bench/node-alternative/server.mjs --upstream "http://127.0.0.1:$FAKE/" --port 0 > "$WORK/node.log" 2>&1 & NODE_PID=$!; PIDS+=($NODE_PID)
            NODE=$(wait_line "$WORK/node.log" 'READY [0-9]+' | cut -d' ' -f2) ;;
    esac
    if [ -n "$PIN_CPU" ]; then
        local pid
        for pid in $NGINX_WORKER $NODE_PID; do
            taskset -a -pc "$PIN_CPU" "$pid" > /dev/null
        done
    fi
    # Startup settled before the baseline RSS is read.
    sleep 0.5
}
stop_proxy() {
    local pid
    for pid in $GW_PID $NGINX_PID $NODE_PID; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ -n "${NGINX:-}" ]; then rm -rf "${TMPDIR:-/tmp}/agui-bench-nginx-$NGINX"; fi
    GW_PID="" NGINX_PID="" NGINX_WORKER="" NODE_PID=""
}

RESULTS="$WORK/runs.jsonl"
: > "$RESULTS"
# load SETUP STREAMS MESSAGE [TIMEOUT]: one loadgen run against a setup. The
# proxy's processes are watched by `perf stat` during the run (task-clock and
# system calls: these VMs have no hardware counters), and the per-event
# figures are added to loadgen's JSON line.
load() {
    local setup=$1 streams=$2 message=$3 timeout=${4:-120}
    start_proxy "$setup"
    local args=(--streams "$streams" --message "$message" --timeout-secs "$timeout" --setup "$setup")
    local watched=()
    local scheme=http
    case "$setup" in
        *-tls-h1*) scheme=https; args+=(--ca-file "$WORK/tls-ca.pem" --protocol http1) ;;
        *-tls-h2*) scheme=https; args+=(--ca-file "$WORK/tls-ca.pem" --protocol http2) ;;
    esac
    case "$setup" in
        direct*) args+=(--url "http://127.0.0.1:$FAKE/" --mode a2a) ;;
        gateway*) args+=(--url "$scheme://127.0.0.1:$GW/agui" --mode agui --pid "$GW_PID"); watched=("$GW_PID") ;;
        nginx*) args+=(--url "$scheme://127.0.0.1:$NGINX/" --mode a2a --pid "$NGINX_PID" --pid "$NGINX_WORKER"); watched=("$NGINX_PID" "$NGINX_WORKER") ;;
        node*) args+=(--url "http://127.0.0.1:$NODE/agui" --mode agui --pid "$NODE_PID"); watched=("$NODE_PID") ;;
    esac
    echo "== $setup x $streams ($message)" >&2
    local perf_csv="$WORK/perf.csv" perf_pid=""
    rm -f "$perf_csv"
    if [ ${#watched[@]} -gt 0 ] && command -v perf >/dev/null 2>&1; then
        perf stat -e task-clock,raw_syscalls:sys_enter -x, -o "$perf_csv" \
            -p "$(IFS=,; echo "${watched[*]}")" > /dev/null 2>&1 & perf_pid=$!
        sleep 0.3
    fi
    local out
    out=$("$BIN/loadgen" "${args[@]}")
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
    fi
    python3 - "$out" "$perf_csv" <<'PY' | tee -a "$RESULTS" >&2
import csv, json, os, sys
run = json.loads(sys.argv[1])
path = sys.argv[2]
if os.path.exists(path):
    figures = {}
    for row in csv.reader(line for line in open(path) if line.strip() and not line.startswith("#")):
        try:
            figures[row[2]] = float(row[0])
        except (IndexError, ValueError):
            pass
    events = run.get("events") or 0
    clock_ms = figures.get("task-clock")
    syscalls = figures.get("raw_syscalls:sys_enter")
    run["perf_cpu_ms"] = clock_ms
    run["perf_syscalls"] = syscalls
    if events and clock_ms is not None:
        run["cpu_us_per_event"] = round(clock_ms * 1000 / events, 2)
    if events and syscalls is not None:
        run["syscalls_per_event"] = round(syscalls / events, 2)
print(json.dumps(run))
PY
    stop_proxy
    sleep 1
}

for scale in $SCALES; do
    for setup in $SETUPS; do
        if [ "$scale" -ge 8000 ]; then
            # Idle streams: one chunk, 8 s of silence, one more: memory per held stream.
            load "$setup" "$scale" "events=2 interval=20 hold=8" 90
        else
            # Live streams: 50 chunks 20 ms apart each (1,000 streams: 50,000 events/s).
            load "$setup" "$scale" "events=50 interval=20"
        fi
    done
done
# Throughput ceiling: 50 streams of 2,000 back-to-back chunks.
for setup in $SETUPS; do
    load "$setup-max" 50 "events=2000 interval=0"
done

python3 - "$RESULTS" "$OUT/results.json" <<'PY'
import json, sys, platform, subprocess, datetime
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p' | head -1"], capture_output=True, text=True).stdout.strip()
machine = f"{cpu}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, Linux {platform.release()}"
json.dump({"machine": machine, "date": datetime.date.today().isoformat(), "runs": runs}, open(sys.argv[2], "w"), indent=1)
PY
"$ROOT/.cache/venv-bench/bin/python" bench/plot.py "$OUT/results.json" --out "$OUT/latency.png" | tee "$OUT/tables.md"
echo "results: $OUT/results.json, $OUT/tables.md, $OUT/latency.png"
