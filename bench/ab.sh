#!/usr/bin/env bash
# An A/B of two gateway builds on the same fake upstream: alternating rounds
# (a, b, a, b, ...) so that a change in the machine's speed during the run
# falls on both. Per round and build, a fresh gateway serves two loads: the
# throughput ceiling (50 streams x 2,000 events) and 1,000 live streams (50
# events, 20 ms apart), then holds 8,000 streams (one chunk, 8 s of
# silence, one more). Prints, for each round, the medians and the change:
# the gateway's events per CPU-second (the ceiling, the live streams) and
# its memory per stream (RSS at its peak less before the load, per stream:
# the live and the held streams).
#
#   A=/tmp/gw-old B=target/release/agui-gateway ROUNDS=5 bash bench/ab.sh
#
# Bounded: ROUNDS at most 20, each load at most 120 s.
# HELD=0 skips the held streams (they need 20,000 file descriptors).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
A=${A:?A=path to the first gateway binary}
B=${B:?B=path to the second gateway binary}
ROUNDS=${ROUNDS:-5}
HELD=${HELD:-8000}
if [ "$ROUNDS" -gt 20 ] || [ "$ROUNDS" -lt 1 ]; then echo "ROUNDS must be 1-20" >&2; exit 2; fi
BIN=target/release
cargo build --release --locked -p agui-bench -p a2a-fake-agent
ulimit -n 20000 2>/dev/null || true
# shellcheck source=lib.sh
source bench/lib.sh

"$BIN/fake-agent" > "$WORK/fake.log" 2>&1 & PIDS+=($!)
FAKE=$(wait_line "$WORK/fake.log" 'READY [0-9]+' | cut -d' ' -f2)

# run BUILD BINARY SCENARIO STREAMS MESSAGE: one load on a fresh gateway; appends
# a JSON line to $WORK/runs.jsonl.
run() {
    local build=$1 binary=$2 scenario=$3 streams=$4 message=$5
    "$binary" --upstream "http://127.0.0.1:$FAKE/" --listen 127.0.0.1:0 > "$WORK/gw.log" 2>&1 & local gw=$!
    PIDS+=("$gw")
    local port
    port=$(wait_line "$WORK/gw.log" '127\.0\.0\.1:[0-9]+' | cut -d: -f2)
    sleep 0.5
    local out
    out=$("$BIN/loadgen" --streams "$streams" --message "$message" --timeout-secs 120 \
        --setup "$scenario" --url "http://127.0.0.1:$port/agui" --mode agui --pid "$gw")
    kill "$gw" 2>/dev/null || true
    wait "$gw" 2>/dev/null || true
    python3 -c '
import json, sys
run = json.loads(sys.argv[1])
run["build"] = sys.argv[2]
print(json.dumps(run))' "$out" "$build" >> "$WORK/runs.jsonl"
    sleep 1
}

for round in $(seq "$ROUNDS"); do
    echo "== round $round of $ROUNDS" >&2
    for build in a b; do
        binary=$A
        if [ "$build" = b ]; then binary=$B; fi
        run "$build" "$binary" ceiling 50 "events=2000 interval=0"
        run "$build" "$binary" live 1000 "events=50 interval=20"
        if [ "$HELD" -gt 0 ]; then
            run "$build" "$binary" held "$HELD" "events=2 interval=20 hold=8"
        fi
    done
done

python3 - "$WORK/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
bad = [r for r in runs if r["errors"]]
def table(title, rows):
    print(f"| {title} | A, by round | median | B, by round | median | change |")
    print("|---|---|---:|---|---:|---:|")
    for label, scenario, measure, fmt in rows:
        values = {}
        for build in ("a", "b"):
            values[build] = [measure(r) for r in runs
                             if r["setup"] == scenario and r["build"] == build and measure(r) is not None]
        if not values["a"] or not values["b"]:
            continue
        ma, mb = statistics.median(values["a"]), statistics.median(values["b"])
        show = lambda xs: " / ".join(fmt(x) for x in xs)
        print(f"| {label} | {show(values['a'])} | {fmt(ma)} | {show(values['b'])} | {fmt(mb)} | {100 * (mb - ma) / ma:+.1f} % |")
    print()
rate = lambda r: round(r["events"] / r["proxy_cpu_s"]) if r.get("proxy_cpu_s") else None
rss = lambda r: r.get("proxy_rss_per_stream_kib")
table("events per CPU-second", [
    ("throughput ceiling, 50 streams × 2,000 events", "ceiling", rate, lambda x: f"{x:,.0f}"),
    ("1,000 live streams × 50 events", "live", rate, lambda x: f"{x:,.0f}"),
])
table("KiB of RSS per stream", [
    ("1,000 live streams × 50 events", "live", rss, lambda x: f"{x:.1f}"),
    ("held streams (one chunk, 8 s of silence, one more)", "held", rss, lambda x: f"{x:.1f}"),
])
print(f"runs with errors: {len(bad)}")
sys.exit(1 if bad else 0)
PY
