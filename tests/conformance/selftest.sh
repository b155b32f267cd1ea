#!/usr/bin/env bash
# Self-test of the conformance harness. Runs check-recordings.sh over
# samples/ and asserts, per file, what each checker must say:
#   good.agui.sse   passes everything
#   bad/*           fails every client version, and ag-ui-validate where it can
#                   tell ("-" = not asserted: 0.4.0 accepts CRLF framing)
#   probes/*        version-dependent behaviour that FINDINGS.md reports
# Then runs run-agent.mjs against a throwaway SSE server on 127.0.0.1.
# Prints one line per assertion and "N passed, M failed"; exit 1 on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SAMPLES="$HERE/samples"

# file | 1.0.0 | 0.0.59 | 0.0.48 | validator | regex the client errors must match
EXPECTATIONS='
good.agui.sse                                 | ok   | ok   | ok   | ok   |
bad/content-after-end.agui.sse                | FAIL | FAIL | FAIL | FAIL | No active text message found
bad/crlf-framing.agui.sse                     | FAIL | FAIL | FAIL | -    | Unexpected non-whitespace character after JSON
bad/event-after-run-finished.agui.sse         | FAIL | FAIL | FAIL | FAIL | already finished with .RUN_FINISHED
bad/first-event-not-run-started.agui.sse      | FAIL | FAIL | FAIL | FAIL | First event must be .RUN_STARTED
bad/missing-data-prefix.agui.sse              | FAIL | FAIL | FAIL | FAIL | \[terminal\].*last event: none
bad/no-terminal-event.agui.sse                | FAIL | FAIL | FAIL | FAIL | \[terminal\]
bad/null-optional-field.agui.sse              | FAIL | FAIL | FAIL | FAIL | name: .*received null
bad/run-finished-open-text.agui.sse           | FAIL | FAIL | FAIL | FAIL | text messages are still active: m-1
bad/unknown-event-type.agui.sse               | FAIL | FAIL | FAIL | FAIL | Dropping unrecognised event|Invalid discriminator value
probes/empty-delta.agui.sse                   | ok   | ok   | FAIL | FAIL | Delta must not be an empty string
probes/float-timestamp.agui.sse               | FAIL | ok   | ok   | ok   | timestamp: .*expected int
probes/heartbeat-comments-event-id-lines.agui.sse | ok | ok | ok   | ok   |
probes/integer-timestamp.agui.sse             | ok   | ok   | ok   | ok   |
probes/interleave-custom-in-text.agui.sse     | ok   | ok   | ok   | ok   |
probes/interleave-toolcall-in-text.agui.sse   | ok   | ok   | ok   | ok   |
probes/multiline-data.agui.sse                | ok   | ok   | ok   | ok   |
probes/outcome-cancelled.agui.sse             | ok   | FAIL | ok   | ok   | outcome.type: Invalid discriminator value
probes/outcome-interrupt.agui.sse             | ok   | ok   | ok   | ok   |
probes/result-and-outcome-interrupt.agui.sse  | ok   | ok   | ok   | ok   |
probes/run-error-terminal.agui.sse            | ok   | ok   | ok   | ok   |
probes/run-finished-result.agui.sse           | ok   | ok   | ok   | ok   |
probes/subagent.agui.sse                      | ok   | ok   | FAIL | ok   | type: Invalid discriminator value
probes/two-text-messages-open.agui.sse        | ok   | ok   | ok   | ok   |
probes/unknown-property.agui.sse              | FAIL | ok   | ok   | ok   | Removed unrecognised material at ./a2aTaskId
'
COLUMNS_=(1.0.0 0.0.59 0.0.48 validator)

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "not ok - $*"; }

# --- 1. recorded samples through check-recordings.sh -------------------------
out="$(mktemp)"
server_pid=""
cleanup() {
  rm -f "$out" "${port_file:-}"
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

rc=0
(cd "$SAMPLES" && bash "$HERE/check-recordings.sh" good.agui.sse bad probes) >"$out" 2>&1 || rc=$?
if [[ $rc -eq 1 ]]; then
  pass "check-recordings.sh exits 1 on samples/ (it contains bad files)"
else
  fail "check-recordings.sh exited $rc on samples/, expected 1"; sed 's/^/    /' "$out"
fi

# Index its result lines: "ok|FAIL <checker> <file>[: reason]".
declare -A verdict reason
while IFS= read -r line; do
  if [[ $line =~ ^(ok|FAIL)\ ([^ ]+)\ ([^ :]+\.agui\.sse)(:\ (.*))?  ]]; then
    verdict["${BASH_REMATCH[2]}|${BASH_REMATCH[3]}"]="${BASH_REMATCH[1]}"
    reason["${BASH_REMATCH[2]}|${BASH_REMATCH[3]}"]="${BASH_REMATCH[5]}"
  fi
done <"$out"

declare -A listed
while IFS='|' read -r file c1 c2 c3 cv pattern; do
  file="$(xargs <<<"$file")"
  [[ -z "$file" ]] && continue
  listed["$file"]=1
  pattern="$(sed 's/^ *//; s/ *$//' <<<"$pattern")"
  expected=("$(xargs <<<"$c1")" "$(xargs <<<"$c2")" "$(xargs <<<"$c3")" "$(xargs <<<"$cv")")
  for i in 0 1 2 3; do
    col="${COLUMNS_[$i]}"
    want="${expected[$i]}"
    [[ "$want" == "-" ]] && continue
    got="${verdict["$col|$file"]:-missing}"
    why="${reason["$col|$file"]:-}"
    if [[ "$got" != "$want" ]]; then
      fail "$col $file: expected $want, got $got${why:+ ($why)}"
    elif [[ "$got" == FAIL && "$col" != validator && -n "$pattern" ]] && ! grep -Eq -- "$pattern" <<<"$why"; then
      fail "$col $file: failed for the wrong reason: $why (expected /$pattern/)"
    else
      pass "$col $file: $got"
    fi
  done
done <<<"$EXPECTATIONS"

# Every sample must have an expectation row, so none is silently unchecked.
while IFS= read -r -d '' f; do
  rel="${f#"$SAMPLES"/}"
  if [[ -z "${listed["$rel"]:-}" ]]; then fail "samples/$rel has no row in selftest.sh EXPECTATIONS"; fi
done < <(find "$SAMPLES" -type f -name '*.agui.sse' -print0)

# --- 2. run-agent.mjs against a local stub server ----------------------------
# Serves samples/<path> as text/event-stream (one frame per write, like a
# flushing server) and /hang as a stream that never ends. Loopback only, and
# killed on exit.
port_file="$(mktemp)"
node --input-type=module - "$SAMPLES" "$port_file" <<'JS' &
import http from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { join, normalize } from "node:path";
const [root, portFile] = process.argv.slice(2);
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", async () => {
    if (req.url === "/hang") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(": ping\n\n");
      return;
    }
    let body;
    try {
      body = readFileSync(join(root, normalize(decodeURIComponent(req.url)).replace(/^(\.\.[/\\])+/, "")), "utf8");
    } catch {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end('{"error":"not found"}');
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const frame of body.split(/(?<=\n\n)/)) {
      res.write(frame);
      await new Promise((r) => setTimeout(r, 2));
    }
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => writeFileSync(portFile, String(server.address().port)));
setTimeout(() => process.exit(0), 120000).unref(); // never outlive the self-test
JS
server_pid=$!
for _ in $(seq 50); do [[ -s "$port_file" ]] && break; sleep 0.1; done
port="$(cat "$port_file")"
base="http://127.0.0.1:$port"

# run_agent <expected exit> <jq-free check regex on the JSON line> <args...>
run_agent() {
  local want_rc="$1" want_json="$2"; shift 2
  local line rc=0
  line="$(node "$HERE/node/run-agent.mjs" --timeout-ms 5000 "$@" 2>/dev/null)" || rc=$?
  if [[ $rc -eq $want_rc ]] && grep -Eq -- "$want_json" <<<"$line"; then
    pass "run-agent $* -> exit $rc"
  else
    fail "run-agent $* -> exit $rc (expected $want_rc and /$want_json/): ${line:0:300}"
  fi
}
for v in 1.0.0 0.0.59 0.0.48; do
  run_agent 0 '"ok":true.*"result":\{"a2aTaskId":"task-1"' --client "$v" --url "$base/good.agui.sse" --thread t-1 --run r-1
  run_agent 1 '"ok":false.*text messages are still active' --client "$v" --url "$base/bad/run-finished-open-text.agui.sse"
  run_agent 1 '"ok":false.*no terminal event' --client "$v" --url "$base/bad/no-terminal-event.agui.sse"
done
run_agent 0 '"ok":true.*"types":\["RUN_STARTED","TEXT_MESSAGE_START","TEXT_MESSAGE_CONTENT","RUN_ERROR"\]' \
  --client 0.0.59 --url "$base/probes/run-error-terminal.agui.sse"
run_agent 1 '"ok":false.*Dropping unrecognised event' --client 1.0.0 --url "$base/bad/unknown-event-type.agui.sse"
run_agent 1 '"ok":false.*HTTP 404' --client 0.0.48 --url "$base/does-not-exist"
run_agent 1 '"ok":false.*timeout' --client 1.0.0 --url "$base/hang" --timeout-ms 800

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
