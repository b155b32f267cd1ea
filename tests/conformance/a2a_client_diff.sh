#!/usr/bin/env bash
# A2A client differential (see a2a_client_diff.py): starts the python-v1 test agent (a2a-sdk 1.3.0)
# and the gateway in front of it, both on free loopback ports, then makes the same a2a-sdk client
# calls against each and compares. Prints "ok/FAIL <check>" lines and "N passed, M failed";
# exits non-zero on any failure. Everything it starts is stopped on exit.
#
# With --grpc: the gRPC-only agent (python-v1/grpc_agent.py) behind the gateway as grpc://, and the
# a2a-sdk gRPC client's calls directly and through the gateway's gRPC passthrough (a2a_grpc_diff.py).
#
# Env: GATEWAY_BIN (default <repo>/target/debug/agui-gateway), PYTHON (default: the
#      .cache/venv-a2a-v1 interpreter that tests/agents/setup.sh creates), SKIP_SETUP=1 skips setup.sh,
#      DIFF_TIMEOUT (default 300 s, the bound on the whole comparison).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
GATEWAY_BIN="${GATEWAY_BIN:-$ROOT/target/debug/agui-gateway}"
PYTHON="${PYTHON:-$ROOT/.cache/venv-a2a-v1/bin/python}"
DIFF_TIMEOUT="${DIFF_TIMEOUT:-300}"
GRPC=''
if [[ "${1:-}" == --grpc ]]; then
  GRPC=1
  shift
fi

if [[ ! -x "$PYTHON" && "${SKIP_SETUP:-}" != 1 ]]; then
  bash "$ROOT/tests/agents/setup.sh" </dev/null
fi
[[ -x "$PYTHON" ]] || { echo "no a2a-sdk 1.3.0 python at $PYTHON (run tests/agents/setup.sh)" >&2; exit 2; }
[[ -x "$GATEWAY_BIN" ]] || { echo "no gateway binary at $GATEWAY_BIN (set GATEWAY_BIN)" >&2; exit 2; }

WORK="$(mktemp -d)"
AGENT_PID=''
GATEWAY_PID=''

# stop PID: SIGTERM, at most 5 s, then SIGKILL.
stop() {
  local pid="$1" i
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  stop "$GATEWAY_PID"
  stop "$AGENT_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for FILE SED-EXPR PID: the first match of SED-EXPR in FILE, waiting at most 30 s.
wait_for() {
  local file="$1" expr="$2" pid="$3" i value=''
  for ((i = 0; i < 300; i++)); do
    value="$(sed -n "$expr" "$file" | head -n1)"
    [[ -n "$value" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  printf '%s' "$value"
}

AGENT_SCRIPT=agent.py
[[ -n "$GRPC" ]] && AGENT_SCRIPT=grpc_agent.py
"$PYTHON" "$ROOT/tests/agents/python-v1/$AGENT_SCRIPT" --host 127.0.0.1 --port 0 \
  >"$WORK/agent.out" 2>"$WORK/agent.err" </dev/null &
AGENT_PID=$!
AGENT_PORT="$(wait_for "$WORK/agent.out" 's/^READY \([0-9][0-9]*\)$/\1/p' "$AGENT_PID")"
if [[ -z "$AGENT_PORT" ]]; then
  echo "FAIL python-v1 did not print READY within 30 s" >&2
  tail -n 20 "$WORK/agent.err" >&2
  exit 1
fi

UPSTREAM="http://127.0.0.1:$AGENT_PORT/"
[[ -n "$GRPC" ]] && UPSTREAM="grpc://127.0.0.1:$AGENT_PORT"
AGUI_GATEWAY_LOG="${AGUI_GATEWAY_LOG:-info}" "$GATEWAY_BIN" \
  --upstream "$UPSTREAM" --listen 127.0.0.1:0 \
  >"$WORK/gateway.out" 2>"$WORK/gateway.err" </dev/null &
GATEWAY_PID=$!
GATEWAY_URL="$(wait_for "$WORK/gateway.out" 's|^agui-gateway listening on \(http://[^ ]*\).*$|\1|p' "$GATEWAY_PID")"
if [[ -z "$GATEWAY_URL" ]]; then
  echo "FAIL the gateway did not print its address within 30 s" >&2
  tail -n 20 "$WORK/gateway.err" "$WORK/gateway.out" >&2
  exit 1
fi

echo "# agent $UPSTREAM  gateway $GATEWAY_URL/  ($GATEWAY_BIN)"
status=0
if [[ -n "$GRPC" ]]; then
  timeout --kill-after=10 "$DIFF_TIMEOUT" "$PYTHON" "$HERE/a2a_grpc_diff.py" \
    --direct "127.0.0.1:$AGENT_PORT" --gateway "$GATEWAY_URL/" "$@" || status=$?
else
  timeout --kill-after=10 "$DIFF_TIMEOUT" "$PYTHON" "$HERE/a2a_client_diff.py" \
    --direct "http://127.0.0.1:$AGENT_PORT/" --gateway "$GATEWAY_URL/" "$@" || status=$?
fi
if [[ "$status" == 124 || "$status" == 137 ]]; then
  echo "FAIL the comparison did not finish within $DIFF_TIMEOUT s"
fi
if [[ "$status" != 0 ]]; then
  for name in agent gateway; do
    pid=$AGENT_PID; [[ "$name" == gateway ]] && pid=$GATEWAY_PID
    state="$(ps -o stat= -p "$pid" 2>/dev/null || true)"
    if [[ -z "$state" || "$state" == Z* ]]; then
      wait "$pid" 2>/dev/null && rc=0 || rc=$?
      echo "# the $name (pid $pid) exited during the run, status $rc"
    fi
    echo "# last lines of the $name's output:"
    tail -n 15 "$WORK/$name.out" "$WORK/$name.err" 2>/dev/null | sed 's/^/#   /'
  done
fi
exit "$status"
