#!/usr/bin/env bash
# Checks recorded AG-UI SSE bodies with both tools we trust, because they
# disagree in places (see FINDINGS.md): the real @ag-ui/client pipelines
# (node/verify-sse.mjs, three client versions) and the ag-ui-validate linter.
#
#   tests/conformance/check-recordings.sh DIR|FILE...
#
# DIRs are searched recursively for *.agui.sse. Prints one line per check and a
# "N passed, M failed" line per tool, then a "total:" line. Exit 1 if anything
# failed, 2 on usage errors.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VALIDATE="$ROOT/.cache/venv-validate/bin/ag-ui-validate"

if [[ $# -eq 0 ]]; then
  echo "usage: $0 DIR|FILE..." >&2
  exit 2
fi

bash "$HERE/setup.sh"

# Collect the files the same way verify-sse.mjs does (explicit files as given).
files=()
for arg in "$@"; do
  if [[ -d "$arg" ]]; then
    while IFS= read -r -d '' f; do files+=("$f"); done \
      < <(find "$arg" -type f -name '*.agui.sse' -print0 | LC_ALL=C sort -z)
  elif [[ -f "$arg" ]]; then
    files+=("$arg")
  else
    echo "check-recordings: no such file or directory: $arg" >&2
    exit 2
  fi
done
if [[ ${#files[@]} -eq 0 ]]; then
  echo "check-recordings: no *.agui.sse files found in: $*" >&2
  exit 2
fi

# --- 1. the real clients ----------------------------------------------------
echo "== @ag-ui/client 1.0.0 / 0.0.59 / 0.0.48 (node/verify-sse.mjs)"
node_rc=0
node_out="$(mktemp)"
trap 'rm -f "$node_out" "${json:-}"' EXIT
node "$HERE/node/verify-sse.mjs" "$@" | tee "$node_out" || node_rc=$?
# Its last line is "N passed, M failed"; keep the numbers for the total.
read -r node_pass _ node_fail _ < <(tail -n 1 "$node_out") || true
[[ "$node_pass" =~ ^[0-9]+$ ]] || { node_pass=0; node_fail=1; node_rc=1; }

# --- 2. ag-ui-validate -------------------------------------------------------
# The CLI takes exactly one target per run (cli_args.py: "expected exactly one
# target"), so it is run once per file. --fail-on warning: we want zero findings.
echo "== ag-ui-validate $("$VALIDATE" --version | awk '{print $2}') --fail-on warning"
v_pass=0
v_fail=0
json="$(mktemp)"
for f in "${files[@]}"; do
  rc=0
  out="$("$VALIDATE" --fail-on warning --no-color --json-file "$json" "$f" 2>&1)" || rc=$?
  summary="$(grep -E '^(✔ no conformance violations|[0-9]+ errors?, )' <<<"$out" | tail -n 1 || true)"
  reason=""
  if [[ $rc -eq 2 ]]; then
    reason="tool failure: $(tail -n 1 <<<"$out")"
  elif [[ $rc -ne 0 ]]; then
    reason="${summary:-exit $rc}"
  # The validator sniffs the format: a body whose lines lack "data:" is read as
  # NDJSON and passes, although no SSE client would see a single event.
  elif grep -q 'the stream is NDJSON' "$json"; then
    reason="read as NDJSON, not SSE (lines without 'data:'); clients see no events"
  elif grep -q 'across 0 events' <<<"$out"; then
    reason="no events in the recording"
  fi
  if [[ -z "$reason" ]]; then
    v_pass=$((v_pass + 1))
    echo "ok validator $f (${summary#✔ })"
  else
    v_fail=$((v_fail + 1))
    echo "FAIL validator $f: $reason"
    # Show the findings themselves (errors and warnings, not info).
    grep -E '^(✖|⚠) ' <<<"$out" | sed 's/^/    /' || true
  fi
done
echo "$v_pass passed, $v_fail failed"

echo "total: $((node_pass + v_pass)) passed, $((node_fail + v_fail)) failed"
if [[ $node_rc -ne 0 || $v_fail -ne 0 ]]; then
  exit 1
fi
