#!/usr/bin/env bash
# Installs what the A2A test agents need, pinned, into git-ignored places:
#   <repo>/.cache/venv-a2a-v1     a2a-sdk 1.3.0  (python-v1/requirements.txt, hash-checked)
#   <repo>/.cache/venv-a2a-v03    a2a-sdk 0.3.26 (python-v03/requirements.txt, hash-checked)
#   tests/agents/js-v1/node_modules  @a2a-js/sdk 1.3.0 + express (js-v1/package-lock.json, npm ci)
# Idempotent and non-interactive: each part is skipped when its stamp file says it was
# installed from the very same lock file and interpreter. Works from any cwd.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

log() { printf 'agents-setup: %s\n' "$*"; }
sha() { sha256sum | cut -d' ' -f1; }

command -v python3 >/dev/null || { log "python3 not found"; exit 1; }
command -v node >/dev/null || { log "node not found"; exit 1; }
command -v npm >/dev/null || { log "npm not found"; exit 1; }

# python_venv NAME REQUIREMENTS: (re)create <repo>/.cache/NAME unless its stamp matches.
python_venv() {
  local venv="$ROOT/.cache/$1" reqs="$2"
  local key stamp="$ROOT/.cache/$1/.setup-stamp"
  key="$( { cat "$reqs"; python3 -c 'import sys; print(sys.version)'; } | sha)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" && -x "$venv/bin/python" ]]; then
    log "$1 up to date"
    return
  fi
  log "creating .cache/$1 from ${reqs#"$ROOT"/}"
  rm -rf "$venv"   # a half-installed or stale venv is not worth repairing
  mkdir -p "$ROOT/.cache"
  python3 -m venv "$venv"
  # --only-binary: every pinned package has a wheel for CPython 3.11 x86_64; never build an sdist.
  PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$venv/bin/python" -m pip install --quiet --require-hashes --only-binary :all: -r "$reqs" </dev/null
  "$venv/bin/python" -c 'import a2a, uvicorn, sse_starlette; from importlib.metadata import version; print("agents-setup:   a2a-sdk", version("a2a-sdk"))'
  printf '%s\n' "$key" > "$stamp"
}

python_venv venv-a2a-v1 "$HERE/python-v1/requirements.txt"
python_venv venv-a2a-v03 "$HERE/python-v03/requirements.txt"

JS_DIR="$HERE/js-v1"
node_key="$( { cat "$JS_DIR/package-lock.json"; node --version; } | sha)"
# Inside node_modules, so `npm ci` (which wipes node_modules) never leaves a stale stamp behind.
node_stamp="$JS_DIR/node_modules/.setup-stamp"
if [[ -f "$node_stamp" && "$(cat "$node_stamp")" == "$node_key" ]]; then
  log "js-v1/node_modules up to date"
else
  log "npm ci in ${JS_DIR#"$ROOT"/}"
  # --ignore-scripts: none of the locked packages needs an install script.
  (cd "$JS_DIR" && CI=true npm ci --no-audit --no-fund --ignore-scripts --loglevel=error </dev/null)
  node -e 'console.log("agents-setup:   @a2a-js/sdk", require(process.argv[1]).version)' \
    "$JS_DIR/node_modules/@a2a-js/sdk/package.json"
  printf '%s\n' "$node_key" > "$node_stamp"
fi

log "done"
