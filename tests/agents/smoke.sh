#!/usr/bin/env bash
# Smoke test of the three A2A test agents with plain curl.
#
# Starts python-v1, python-v03 and js-v1 on free loopback ports (--port 0), then for every
# dialect each one speaks checks the card and the chunks, message-only, input-required (plus
# the follow-up turn on the same task), fail, progress and commands scenarios, and cancel-me on
# the JSON-RPC dialects. Each SSE body is kept byte for byte in
#   ${RECORDINGS_DIR:-tests/agents/recordings}/<agent>-<dialect>-<scenario>.sse
# Ends by stopping every agent with SIGTERM (each must exit 0) and prints "N passed, M failed".
#
# Env: SKIP_SETUP=1 skips ./setup.sh; DELAY_MS is passed to the agents; RECORDINGS_DIR.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
REC="${RECORDINGS_DIR:-$HERE/recordings}"
CHECK=(python3 "$HERE/sse_check.py")
CURL=(curl -sS -N --max-time 20 --connect-timeout 5)

if [[ "${SKIP_SETUP:-}" != 1 ]]; then
  bash "$HERE/setup.sh" </dev/null
fi

WORK="$(mktemp -d)"
declare -A PID PORT
passed=0
failed=0

pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }

# stop_agent NAME: SIGTERM, wait at most 5 s, report the exit status.
stop_agent() {
  local name="$1" pid="${PID[$1]:-}" i status
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    fail "$name exits on SIGTERM (still running after 5 s; killed)"
  else
    status=0
    wait "$pid" 2>/dev/null || status=$?
    if [[ "$status" == 0 ]]; then pass "$name exits 0 on SIGTERM"; else fail "$name exit status $status on SIGTERM"; fi
  fi
  unset "PID[$name]"
}

cleanup() {
  local name
  for name in "${!PID[@]}"; do
    kill -KILL "${PID[$name]}" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_agent NAME CMD...: run with --port 0 and wait (at most 30 s) for "READY <port>".
start_agent() {
  local name="$1" i port=''
  shift
  : >"$WORK/$name.out"
  "$@" --host 127.0.0.1 --port 0 >>"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null &
  PID[$name]=$!
  for ((i = 0; i < 300; i++)); do
    port="$(sed -n 's/^READY \([0-9][0-9]*\)$/\1/p' "$WORK/$name.out" | head -n1)"
    [[ -n "$port" ]] && break
    kill -0 "${PID[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$port" ]]; then
    fail "$name prints READY within 30 s"
    sed 's/^/    /' "$WORK/$name.err" | tail -n 20
    kill -KILL "${PID[$name]}" 2>/dev/null || true
    unset "PID[$name]"
    return 1
  fi
  PORT[$name]=$port
  pass "$name READY on port $port"
}

# ----------------------------------------------------------------- requests --

# body DIALECT TEXT [TASK_ID CONTEXT_ID] [METADATA_JSON]
body() {
  local dialect="$1" text="$2" task="${3:-}" ctx="${4:-}" meta="${5:-}" extra='' mid
  mid="smoke-$RANDOM$RANDOM"
  [[ -n "$task" ]] && extra+=",\"taskId\":\"$task\""
  [[ -n "$ctx" ]] && extra+=",\"contextId\":\"$ctx\""
  [[ -n "$meta" ]] && extra+=",\"metadata\":$meta"
  case "$dialect" in
    jsonrpc10) printf '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"%s","parts":[{"text":"%s"}]%s}}}' "$mid" "$text" "$extra" ;;
    jsonrpc03) printf '{"jsonrpc":"2.0","id":"smoke-1","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"%s","parts":[{"kind":"text","text":"%s"}]%s}}}' "$mid" "$text" "$extra" ;;
    rest10) printf '{"message":{"role":"ROLE_USER","messageId":"%s","parts":[{"text":"%s"}]%s}}' "$mid" "$text" "$extra" ;;
    rest03) printf '{"message":{"role":"ROLE_USER","messageId":"%s","content":[{"text":"%s"}]%s}}' "$mid" "$text" "$extra" ;;
  esac
}

code_of() { case "$1" in jsonrpc10) echo j10 ;; jsonrpc03) echo j03 ;; rest10) echo r10 ;; rest03) echo r03 ;; esac; }

# url_of BASE DIALECT: where a streaming message goes.
url_of() {
  case "$2" in
    jsonrpc*) echo "$1" ;;
    rest10) echo "$1/message:stream" ;;
    rest03) echo "$1/v1/message:stream" ;;
  esac
}

# headers_of DIALECT: curl header args (1.0 needs A2A-Version; 0.3 sends none).
headers_of() {
  printf '%s\n' -H 'Content-Type: application/json'
  case "$1" in *10) printf '%s\n' -H 'A2A-Version: 1.0' ;; esac
}

# stream AGENT DIALECT BASE SCENARIO_LABEL TEXT [TASK CTX META]: record one SSE body, echo its path.
stream() {
  local agent="$1" dialect="$2" base="$3" label="$4" text="$5" out meta_line
  out="$REC/$agent-$dialect-$label.sse"
  local -a hdr
  mapfile -t hdr < <(headers_of "$dialect")
  meta_line="$("${CURL[@]}" -o "$out" -w '%{http_code} %{content_type}' -X POST "$(url_of "$base" "$dialect")" \
    "${hdr[@]}" --data-binary "$(body "$dialect" "$text" "${6:-}" "${7:-}" "${8:-}")" 2>"$WORK/curl.err")" || true
  echo "$meta_line" >"$WORK/last-http"
  echo "$out"
}

# verify AGENT DIALECT LABEL FILE CHECK_ARGS...: HTTP status, content type, then sse_check.py.
verify() {
  local agent="$1" dialect="$2" label="$3" file="$4" http ctype reason
  shift 4
  read -r http ctype <"$WORK/last-http" || true
  if [[ "$http" != 200 || "$ctype" != text/event-stream* ]]; then
    reason="HTTP ${http:-none} ${ctype:-}: $(head -c 300 "$file" 2>/dev/null || true) $(cat "$WORK/curl.err")"
    fail "$agent $dialect $label ($reason)"
    return 1
  fi
  if "${CHECK[@]}" --dialect "$(code_of "$dialect")" "$@" "$file" >"$WORK/check.out" 2>"$WORK/check.err"; then
    pass "$agent $dialect $label"
  else
    fail "$agent $dialect $label: $(tr '\n' ';' <"$WORK/check.err")"
    return 1
  fi
}

ALIBABA_META='{"user":{"userId":"u1"},"device":{"clientIp":"127.0.0.1","deviceId":"d1"},"location":{"city":"Hangzhou","longitude":"120.1","latitude":"30.2"},"userDefinedParams":{"param1":"value1"},"commandResults":[{"commandRequestId":"cmd-0","result":"ok"}],"images":[{"type":"url","value":"https://example.com/1.png"}],"chatId":"chat-1"}'

scenarios() {
  local agent="$1" dialect="$2" base="$3" f ids task ctx
  for s in chunks message-only fail; do
    f="$(stream "$agent" "$dialect" "$base" "$s" "$s")"
    verify "$agent" "$dialect" "$s" "$f" --scenario "$s" || true
  done
  # progress with 0.2 s pauses (its own default is 1 s): three status messages, then the answer.
  f="$(stream "$agent" "$dialect" "$base" progress progress:0.2)"
  verify "$agent" "$dialect" progress "$f" --scenario progress || true
  f="$(stream "$agent" "$dialect" "$base" commands commands '' '' "$ALIBABA_META")"
  verify "$agent" "$dialect" commands "$f" --scenario commands || true

  f="$(stream "$agent" "$dialect" "$base" input-required input-required)"
  if verify "$agent" "$dialect" input-required "$f" --scenario input-required; then
    ids="$(cat "$WORK/check.out")"
    task="$(sed -n 's/^task=\([^ ]*\) .*/\1/p' <<<"$ids")"
    ctx="$(sed -n 's/.* context=\(.*\)$/\1/p' <<<"$ids")"
    f="$(stream "$agent" "$dialect" "$base" input-required-followup Paris "$task" "$ctx")"
    verify "$agent" "$dialect" input-required-followup "$f" --scenario input-required --follow-up || true
  else
    fail "$agent $dialect input-required-followup (skipped: first turn failed)"
  fi
}

# cancel_check AGENT DIALECT BASE: cancel-me, then tasks/cancel | CancelTask mid-stream.
cancel_check() {
  local agent="$1" dialect="$2" base="$3" out i task='' req cpid resp
  out="$REC/$agent-$dialect-cancel-me.sse"
  local -a hdr
  mapfile -t hdr < <(headers_of "$dialect")
  "${CURL[@]}" -o "$out" -w '%{http_code} %{content_type}' -X POST "$base" "${hdr[@]}" \
    --data-binary "$(body "$dialect" cancel-me)" >"$WORK/last-http" 2>"$WORK/curl.err" &
  cpid=$!
  for ((i = 0; i < 50; i++)); do
    sleep 0.1
    task="$(grep -o '"taskId": *"[^"]*"' "$out" 2>/dev/null | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')" || true
    [[ -n "$task" ]] && break
  done
  if [[ -z "$task" ]]; then
    kill "$cpid" 2>/dev/null || true
    wait "$cpid" 2>/dev/null || true
    fail "$agent $dialect cancel-me (no taskId within 5 s)"
    return
  fi
  if [[ "$dialect" == jsonrpc10 ]]; then
    req="{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"CancelTask\",\"params\":{\"id\":\"$task\"}}"
  else
    req="{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/cancel\",\"params\":{\"id\":\"$task\"}}"
  fi
  resp="$("${CURL[@]}" -X POST "$base" "${hdr[@]}" --data-binary "$req" 2>&1)" || true
  wait "$cpid" 2>/dev/null || true
  if ! grep -Eq '"(canceled|TASK_STATE_CANCELED)"' <<<"$resp"; then
    fail "$agent $dialect cancel-me (cancel answered: ${resp:0:300})"
    return
  fi
  verify "$agent" "$dialect" cancel-me "$out" --scenario cancel-me || true
}

# check_card AGENT BASE_ORIGIN [EXTRA_PATH] [HEADER]: the card parses and declares what tests rely on.
check_card() {
  local agent="$1" origin="$2" path="${3:-/.well-known/agent-card.json}" header="${4:-}" label
  label="card ${path}${header:+ ($header)}"
  local -a extra=()
  [[ -n "$header" ]] && extra=(-H "$header")
  if "${CURL[@]}" "${extra[@]}" "$origin$path" 2>"$WORK/curl.err" | python3 -c '
import json, sys
card = json.load(sys.stdin)
caps = card.get("capabilities", {})
uris = {e.get("uri") for e in caps.get("extensions", [])}
need = {"https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol",
        "https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1",
        "https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1"}
assert caps.get("streaming") is True, "capabilities.streaming is not true"
assert need <= uris, f"missing extensions {sorted(need - uris)}"
assert card.get("url") or card.get("supportedInterfaces"), "no url and no supportedInterfaces"
' 2>"$WORK/card.err"; then
    pass "$agent $label"
  else
    fail "$agent $label: $(tail -n1 "$WORK/card.err") $(cat "$WORK/curl.err")"
  fi
}

# --------------------------------------------------------------------- main --

mkdir -p "$REC"
export DELAY_MS="${DELAY_MS:-20}"

declare -A DIALECTS=(
  [python-v1]="jsonrpc10:/ jsonrpc03:/ rest10:/rest rest03:/rest"
  [python-v03]="jsonrpc03:/ rest03:/rest"
  [js-v1]="jsonrpc10:/a2a/jsonrpc jsonrpc03:/a2a/jsonrpc rest10:/a2a/rest rest03:/a2a/rest"
)

start_agent python-v1 "$ROOT/.cache/venv-a2a-v1/bin/python" "$HERE/python-v1/agent.py" || true
start_agent python-v03 "$ROOT/.cache/venv-a2a-v03/bin/python" "$HERE/python-v03/agent.py" || true
start_agent js-v1 node "$HERE/js-v1/agent.mjs" || true

for agent in python-v1 python-v03 js-v1; do
  [[ -n "${PORT[$agent]:-}" ]] || continue
  origin="http://127.0.0.1:${PORT[$agent]}"
  check_card "$agent" "$origin"
  case "$agent" in
    python-v03) check_card "$agent" "$origin" /.well-known/agent.json ;;
    js-v1) check_card "$agent" "$origin" /.well-known/agent-card.json 'A2A-Version: 1.0' ;;
  esac
  for entry in ${DIALECTS[$agent]}; do
    dialect="${entry%%:*}"
    base="$origin${entry#*:}"
    base="${base%/}"
    [[ "$dialect" == jsonrpc* ]] && base="$base/"
    [[ "$base" == */a2a/jsonrpc/ ]] && base="${base%/}"
    scenarios "$agent" "$dialect" "$base"
    [[ "$dialect" == jsonrpc* ]] && cancel_check "$agent" "$dialect" "$base"
  done
done

for agent in python-v1 python-v03 js-v1; do
  stop_agent "$agent"
done

echo "recordings: ${REC#"$ROOT"/}"
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
