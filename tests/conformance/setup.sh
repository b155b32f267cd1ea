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


# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
pinned_venv "$VENV" "$REQS"
"$VENV/bin/ag-ui-validate" --version | sed 's/^/setup: /'
npm_ci_pinned "$NODE_DIR"

# Prove that each npm alias loads its own @ag-ui/core (exits non-zero otherwise).
node "$NODE_DIR/verify-sse.mjs" --versions | sed 's/^/setup: /'
log "done"
