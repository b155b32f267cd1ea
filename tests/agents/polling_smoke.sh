#!/usr/bin/env bash
# Smoke test of the test agents' polling and card switches (README "Polling and card switches").
#
# Starts each variant on a free loopback port (--port 0), checks its card, that a card saying
# `streaming: false` makes the SDK refuse a streaming call, and one non-blocking send of the
# `progress` scenario followed by task reads (poll_check.py) on each binding the variant serves;
# with CALL_LOG, that the log holds one line per read. Stops every agent with SIGTERM (each must
# exit 0) and prints "N passed, M failed". Every wait is bounded; agents are killed at exit.
#
# Env: SKIP_SETUP=1 skips ./setup.sh; DELAY_MS is passed to the agents (default 20).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY1="$ROOT/.cache/venv-a2a-v1/bin/python"
PY03="$ROOT/.cache/venv-a2a-v03/bin/python"
CURL=(curl -sS --max-time 10 --connect-timeout 5)

if [[ "${SKIP_SETUP:-}" != 1 ]]; then
  bash "$HERE/setup.sh" </dev/null
fi
export DELAY_MS="${DELAY_MS:-20}"

WORK="$(mktemp -d)"
declare -A PID PORT CARD
passed=0
failed=0

pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }

cleanup() {
  local name
  for name in "${!PID[@]}"; do
    kill -KILL "${PID[$name]}" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME ENV=VALUE... -- CMD...: run with --port 0; wait (at most 30 s) for "READY <port>",
# and take the "CARD <port>" line the gRPC agent prints before it.
start() {
  local name="$1" i port=''
  shift
  local -a envs=()
  while [[ "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  : >"$WORK/$name.out"
  env "${envs[@]}" "$@" --host 127.0.0.1 --port 0 >>"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null &
  PID[$name]=$!
  for ((i = 0; i < 300; i++)); do
    port="$(sed -n 's/^READY \([0-9][0-9]*\)$/\1/p' "$WORK/$name.out" | head -n1)"
    [[ -n "$port" ]] && break
    kill -0 "${PID[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$port" ]]; then
    fail "$name prints READY within 30 s"
    tail -n 20 "$WORK/$name.err" | sed 's/^/    /'
    kill -KILL "${PID[$name]}" 2>/dev/null || true
    unset "PID[$name]"
    return 1
  fi
  PORT[$name]=$port
  CARD[$name]="$(sed -n 's/^CARD \([0-9][0-9]*\)$/\1/p' "$WORK/$name.out" | head -n1)"
  pass "$name READY on port $port${CARD[$name]:+ (CARD ${CARD[$name]})}"
}

# stop NAME: SIGTERM, wait at most 5 s, report the exit status.
stop() {
  local name="$1" pid="${PID[$1]:-}" i status=0
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    fail "$name exits on SIGTERM (still running after 5 s; killed)"
  else
    wait "$pid" 2>/dev/null || status=$?
    if [[ "$status" == 0 ]]; then pass "$name exits 0 on SIGTERM"; else fail "$name exit status $status on SIGTERM"; fi
  fi
  unset "PID[$name]"
}

# card NAME URL ASSERTIONS: the card at URL, as `c`, passes the Python ASSERTIONS (`own` is the
# agent's port, `grpc` its gRPC address).
card() {
  local name="$1" url="$2" code="$3"
  if "${CURL[@]}" "$url" 2>"$WORK/curl.err" >"$WORK/card.json" &&
    OWN="${PORT[$name]}" python3 -c '
import json, os, sys
c = json.load(open(sys.argv[1]))
own = os.environ["OWN"]
grpc = f"127.0.0.1:{own}"
ifaces = [(i.get("protocolBinding"), i.get("protocolVersion"), i.get("url")) for i in c.get("supportedInterfaces", [])]
'"$code" "$WORK/card.json" 2>"$WORK/card.err"; then
    pass "$name card"
  else
    fail "$name card: $(tail -n 1 "$WORK/card.err") $(cat "$WORK/curl.err") $(head -c 400 "$WORK/card.json" 2>/dev/null)"
  fi
}

# refused NAME LABEL URL BODY [HEADER]: a streaming call is answered with the SDK's refusal.
refused() {
  local name="$1" label="$2" url="$3" body="$4" header="${5:-X-None: 1}" got
  got="$("${CURL[@]}" -X POST "$url" -H 'Content-Type: application/json' -H "$header" --data-binary "$body" 2>&1)" || true
  if grep -q 'Streaming is not supported by the agent' <<<"$got"; then
    pass "$name refuses $label"
  else
    fail "$name refuses $label (answered: ${got:0:300})"
  fi
}

# poll NAME PYTHON DIALECT BASE TEXT [--blocking]: poll_check.py; its "gets=N" goes to $WORK/gets.
poll() {
  local name="$1" python="$2" dialect="$3" base="$4" text="$5"
  shift 5
  if timeout 60 "$python" "$HERE/poll_check.py" --dialect "$dialect" --base "$base" --text "$text" "$@" \
    >"$WORK/poll.out" 2>"$WORK/poll.err"; then
    sed -n 's/.* gets=\([0-9]*\) .*/\1/p' "$WORK/poll.out" >"$WORK/gets"
    pass "$name $dialect $text ${*:-non-blocking}: $(cat "$WORK/poll.out")"
  else
    echo 0 >"$WORK/gets"
    fail "$name $dialect $text ${*:-non-blocking}: $(tr '\n' ';' <"$WORK/poll.err" | head -c 600)"
  fi
}

# logged NAME LOG METHOD_PREFIX: the call log has as many lines starting with METHOD_PREFIX as the
# last poll made reads, each line {"t": float, "method": str}.
logged() {
  local name="$1" log="$2" prefix="$3" want
  want="$(cat "$WORK/gets")"
  if python3 - "$log" "$prefix" "$want" 2>"$WORK/log.err" <<'EOF'
import json, sys
path, prefix, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(line) for line in open(path)]
assert all(set(l) == {'t', 'method'} and isinstance(l['t'], float) for l in lines), 'line shape'
got = sum(1 for l in lines if l['method'].startswith(prefix))
assert want > 0 and got == want, f'{got} lines {prefix!r}, {want} reads'
EOF
  then
    pass "$name CALL_LOG: $want x $prefix"
  else
    fail "$name CALL_LOG $prefix: $(tail -n 1 "$WORK/log.err")"
  fi
  : >"$log"
}

J03_STREAM='{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"ps-1","parts":[{"kind":"text","text":"progress"}]}}}'
J10_STREAM='{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"ps-2","parts":[{"text":"progress"}]}}}'

# ------------------------------------------- python-v1, STREAMING=0, CALL_LOG --
n=v1-nostream
log="$WORK/$n.log"
if start $n STREAMING=0 CALL_LOG="$log" -- "$PY1" "$HERE/python-v1/agent.py"; then
  o="http://127.0.0.1:${PORT[$n]}"
  card $n "$o/.well-known/agent-card.json" '
assert c["capabilities"]["streaming"] is False
assert ifaces[0] == ("JSONRPC", "1.0", f"http://127.0.0.1:{own}/"), ifaces'
  refused $n SendStreamingMessage "$o/" "$J10_STREAM" 'A2A-Version: 1.0'
  refused $n message/stream "$o/" "$J03_STREAM"
  refused $n 'REST 1.0 message:stream' "$o/rest/message:stream" \
    '{"message":{"role":"ROLE_USER","messageId":"ps-3","parts":[{"text":"progress"}]}}' 'A2A-Version: 1.0'
  : >"$log"
  poll $n "$PY1" j10 "$o/" progress
  logged $n "$log" GetTask
  poll $n "$PY1" j03 "$o/" progress:0.5
  logged $n "$log" tasks/get
  poll $n "$PY1" r10 "$o/rest" progress:0.5
  logged $n "$log" 'GET /rest/tasks/'
  poll $n "$PY1" r03 "$o/rest" progress:0.5
  logged $n "$log" 'GET /rest/v1/tasks/'
  poll $n "$PY1" j03 "$o/" progress:0.3 --blocking
  stop $n
fi

# ------------------------------------- python-v1, CARD_VERSIONS=0.3, STREAMING=0 --
n=v1-card03
if start $n STREAMING=0 CARD_VERSIONS=0.3 -- "$PY1" "$HERE/python-v1/agent.py"; then
  o="http://127.0.0.1:${PORT[$n]}"
  card $n "$o/.well-known/agent-card.json" '
assert "supportedInterfaces" not in c, "supportedInterfaces"
assert (c["url"], c["preferredTransport"], c["protocolVersion"]) == (f"http://127.0.0.1:{own}/", "JSONRPC", "0.3"), c
assert c["additionalInterfaces"] == [{"transport": "HTTP+JSON", "url": f"http://127.0.0.1:{own}/rest"}], c
assert c["capabilities"]["streaming"] is False'
  refused $n message/stream "$o/" "$J03_STREAM"
  poll $n "$PY1" j03 "$o/" progress:0.5
  stop $n
fi

# ------------------------------------------------ python-v1, CARD_ORDER=rest-first --
n=v1-restfirst
if start $n CARD_ORDER=rest-first -- "$PY1" "$HERE/python-v1/agent.py"; then
  o="http://127.0.0.1:${PORT[$n]}"
  card $n "$o/.well-known/agent-card.json" '
r, j = f"http://127.0.0.1:{own}/rest", f"http://127.0.0.1:{own}/"
assert ifaces == [("HTTP+JSON", "1.0", r), ("HTTP+JSON", "0.3", r), ("JSONRPC", "1.0", j), ("JSONRPC", "0.3", j)], ifaces
assert (c["preferredTransport"], c["url"]) == ("HTTP+JSON", r), c'
  poll $n "$PY1" r10 "$o/rest" progress:0.3
  stop $n
fi

# --------------------------------------------------------- python-v1, CARD_FOREIGN --
n=v1-foreign
if start $n CARD_FOREIGN=http://192.0.2.1:9/a2a -- "$PY1" "$HERE/python-v1/agent.py"; then
  o="http://127.0.0.1:${PORT[$n]}"
  card $n "$o/.well-known/agent-card.json" '
assert ifaces[0] == ("JSONRPC", "1.0", "http://192.0.2.1:9/a2a"), ifaces
assert ifaces[1] == ("JSONRPC", "1.0", f"http://127.0.0.1:{own}/"), ifaces
assert c["url"] == f"http://127.0.0.1:{own}/", c'
  stop $n
fi

# ------------------------------------------ python-v03, STREAMING=0, CALL_LOG --
n=v03-nostream
log="$WORK/$n.log"
if start $n STREAMING=0 CALL_LOG="$log" -- "$PY03" "$HERE/python-v03/agent.py"; then
  o="http://127.0.0.1:${PORT[$n]}"
  card $n "$o/.well-known/agent-card.json" '
assert c["capabilities"]["streaming"] is False
assert (c["url"], c["preferredTransport"]) == (f"http://127.0.0.1:{own}/", "JSONRPC"), c'
  refused $n message/stream "$o/" "$J03_STREAM"
  : >"$log"
  poll $n "$PY03" j03 "$o/" progress:0.5
  logged $n "$log" tasks/get
  poll $n "$PY03" r03 "$o/rest" progress:0.5
  logged $n "$log" 'GET /rest/v1/tasks/'
  poll $n "$PY03" j03 "$o/" progress:0.3 --blocking
  stop $n
fi

# ------------------------------- gRPC, CARD_HTTP_PORT=0, STREAMING=0, CALL_LOG --
n=grpc-nostream
log="$WORK/$n.log"
if start $n STREAMING=0 CARD_HTTP_PORT=0 CALL_LOG="$log" -- "$PY1" "$HERE/python-v1/grpc_agent.py"; then
  if [[ "$(head -n 1 "$WORK/$n.out")" == "CARD ${CARD[$n]}" && -n "${CARD[$n]}" ]]; then
    pass "$n prints CARD <port> before READY"
  else
    fail "$n prints CARD <port> before READY: $(tr '\n' ';' <"$WORK/$n.out")"
  fi
  card $n "http://127.0.0.1:${CARD[$n]}/.well-known/agent-card.json" '
assert ifaces == [("GRPC", "1.0", grpc), ("GRPC", "0.3", grpc)], ifaces
assert c["capabilities"]["streaming"] is False'
  : >"$log"
  poll $n "$PY1" g10 "127.0.0.1:${PORT[$n]}" progress:0.5
  logged $n "$log" /lf.a2a.v1.A2AService/GetTask
  poll $n "$PY1" g03 "127.0.0.1:${PORT[$n]}" progress:0.5
  logged $n "$log" /a2a.v1.A2AService/GetTask
  poll $n "$PY1" g03 "127.0.0.1:${PORT[$n]}" progress:0.3 --blocking
  stop $n
fi

# --------------------------------------------- gRPC, CARD_HTTP_PORT=0, GRPC_CARD=0.3 --
n=grpc-card03
if start $n CARD_HTTP_PORT=0 GRPC_CARD=0.3 -- "$PY1" "$HERE/python-v1/grpc_agent.py"; then
  card $n "http://127.0.0.1:${CARD[$n]}/.well-known/agent-card.json" '
assert "supportedInterfaces" not in c, "supportedInterfaces"
assert (c["url"], c["preferredTransport"], c["protocolVersion"]) == (grpc, "GRPC", "0.3"), c
assert c["capabilities"]["streaming"] is True'
  poll $n "$PY1" g03 "127.0.0.1:${PORT[$n]}" progress:0.3
  stop $n
fi

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
