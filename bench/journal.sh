#!/usr/bin/env bash
# What journaling costs (issue 13): the same fake A2A upstream through three
# agui-gateway processes side by side, `--journal off`, `memory` (the
# default) and `redis://` (a redis-server on loopback), in alternating
# rounds. Per run, loadgen reports the gateway's CPU time and peak RSS.
#   bash bench/journal.sh            # ROUNDS=3 by default
# Scenarios: the throughput ceiling (50 streams x 2,000 back-to-back events),
# 1,000 live streams (50 events 20 ms apart) and 1,000 held streams (one
# event, 8 s of silence, one more: memory per held stream). Every load run is
# bounded in count (--streams) and time (--timeout-secs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-3}
OUT="$ROOT/bench/results/journal.jsonl"
mkdir -p "$(dirname "$OUT")"
cargo build --release --locked -p agui-bench -p a2a-fake-agent -p agui-gateway
bash scripts/apt-install.sh redis-server=redis-server
ulimit -n 20000 2>/dev/null || true
BIN="$ROOT/target/release"
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

"$BIN/fake-agent" > "$WORK/fake.log" 2>&1 & PIDS+=($!)
FAKE=$(wait_line "$WORK/fake.log" 'READY [0-9]+' | cut -d' ' -f2)
REDIS=$(free_port)
redis-server --bind 127.0.0.1 --port "$REDIS" --save '' --appendonly no --dir "$WORK" > "$WORK/redis.log" 2>&1 & PIDS+=($!)
wait_line "$WORK/redis.log" 'Ready to accept connections' > /dev/null

declare -A PORT PID
start() {
    local name=$1 journal=$2
    "$BIN/agui-gateway" --upstream "http://127.0.0.1:$FAKE/" --listen 127.0.0.1:0 --journal "$journal" \
        > "$WORK/$name.log" 2>&1 &
    PID[$name]=$!; PIDS+=($!)
    PORT[$name]=$(wait_line "$WORK/$name.log" '127\.0\.0\.1:[0-9]+' | cut -d: -f2)
}
start off off
start memory memory
start redis "redis://127.0.0.1:$REDIS/0"

: > "$OUT"
load() {
    local name=$1 streams=$2 message=$3 label=$4
    echo "== $name: $label" >&2
    "$BIN/loadgen" --url "http://127.0.0.1:${PORT[$name]}/agui" --mode agui --pid "${PID[$name]}" \
        --streams "$streams" --message "$message" --timeout-secs 120 --setup "$name $label" \
        | tee -a "$OUT" >&2
    sleep 1
}
for round in $(seq "$ROUNDS"); do
    for name in off memory redis; do
        load "$name" 50 "events=2000 interval=0" "ceiling (50 x 2,000)"
        load "$name" 1000 "events=50 interval=20" "1,000 live streams"
        load "$name" 1000 "events=2 interval=20 hold=8" "1,000 held streams"
    done
done
echo "results: $OUT" >&2
