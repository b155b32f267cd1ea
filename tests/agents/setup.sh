#!/usr/bin/env bash
# Installs what the A2A test agents need, pinned, into git-ignored places:
#   <repo>/.cache/venv-a2a-v1     a2a-sdk 1.3.0  (python-v1/requirements.txt, hash-checked)
#   <repo>/.cache/venv-a2a-v03    a2a-sdk 0.3.26 (python-v03/requirements.txt, hash-checked)
#   tests/agents/js-v1/node_modules  @a2a-js/sdk 1.3.0 + express (js-v1/package-lock.json, npm ci)
# Idempotent and non-interactive (scripts/lib/pinned.sh). Works from any cwd.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { printf 'agents-setup: %s\n' "$*"; }
# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"

pinned_venv "$ROOT/.cache/venv-a2a-v1" "$HERE/python-v1/requirements.txt"
pinned_venv "$ROOT/.cache/venv-a2a-v03" "$HERE/python-v03/requirements.txt"
npm_ci_pinned "$HERE/js-v1"
for venv in venv-a2a-v1 venv-a2a-v03; do
  "$ROOT/.cache/$venv/bin/python" -c 'from importlib.metadata import version; print("agents-setup:   a2a-sdk", version("a2a-sdk"))'
done
node -e 'console.log("agents-setup:   @a2a-js/sdk", require(process.argv[1]).version)' \
  "$HERE/js-v1/node_modules/@a2a-js/sdk/package.json"
log "done"
