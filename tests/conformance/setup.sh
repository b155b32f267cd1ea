#!/usr/bin/env bash
# Installs the conformance tooling, pinned, into git-ignored places:
#   <repo>/.cache/venv-validate        ag-ui-validate (PyPI), from python/requirements.txt, hash-checked
#   tests/conformance/node/node_modules the real @ag-ui/client 1.0.0 / 0.0.59 / 0.0.48, from package-lock.json
# Idempotent and non-interactive: each half is skipped when a stamp file says it
# was installed from the very same lock file (and interpreter), so reruns take
# well under a second. Works from any cwd.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$ROOT/.cache/venv-validate"
REQS="$HERE/python/requirements.txt"
NODE_DIR="$HERE/node"

log() { printf 'setup: %s\n' "$*"; }

sha() { sha256sum | cut -d' ' -f1; }

# ---------------------------------------------------------------- python --
command -v python3 >/dev/null || { log "python3 not found"; exit 1; }
# Key: the lock file plus the interpreter, so a new Python rebuilds the venv.
py_key="$( { cat "$REQS"; python3 -c 'import sys; print(sys.version)'; } | sha)"
py_stamp="$VENV/.setup-stamp"
if [[ -f "$py_stamp" && "$(cat "$py_stamp")" == "$py_key" && -x "$VENV/bin/ag-ui-validate" ]]; then
  log "ag-ui-validate venv up to date ($VENV)"
else
  log "creating $VENV"
  rm -rf "$VENV"   # start clean: a half-installed or stale venv is not worth repairing
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
  log "pip install --require-hashes -r ${REQS#"$ROOT"/}"
  # --only-binary: everything is a pure-Python wheel; never run an sdist's build.
  PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$VENV/bin/python" -m pip install --quiet --require-hashes --only-binary :all: -r "$REQS" </dev/null
  "$VENV/bin/ag-ui-validate" --version
  printf '%s\n' "$py_key" > "$py_stamp"
fi

# ------------------------------------------------------------------ node --
command -v node >/dev/null || { log "node not found"; exit 1; }
command -v npm >/dev/null || { log "npm not found"; exit 1; }
node_key="$( { cat "$NODE_DIR/package-lock.json"; node --version; } | sha)"
# The stamp lives inside node_modules, so `npm ci` (which wipes node_modules)
# can never leave a stale one behind.
node_stamp="$NODE_DIR/node_modules/.setup-stamp"
if [[ -f "$node_stamp" && "$(cat "$node_stamp")" == "$node_key" ]]; then
  log "node_modules up to date ($NODE_DIR/node_modules)"
else
  log "npm ci in ${NODE_DIR#"$ROOT"/}"
  # --ignore-scripts: none of the locked packages needs an install script.
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error </dev/null)
  printf '%s\n' "$node_key" > "$node_stamp"
fi

# Prove that each npm alias loads its own @ag-ui/core (exits non-zero otherwise).
node "$NODE_DIR/verify-sse.mjs" --versions | sed 's/^/setup: /'
log "done"
