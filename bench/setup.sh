#!/usr/bin/env bash
# Installs what the benchmark comparison needs besides the Rust build, idempotently and
# non-interactively. Works from any cwd.
#   nginx                              Debian package nginx-light (apt-get), only if no nginx is found
#   bench/node-alternative/node_modules   npm ci from package-lock.json (@ag-ui/a2a 0.0.6 & co.)
#   <repo>/.cache/venv-bench           matplotlib for bench/plot.py (bench/requirements.txt, hash-checked)
# Each part is skipped when it is already in place (a stamp file records the lock file's hash).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

log() { printf 'bench-setup: %s\n' "$*"; }

# --- nginx -----------------------------------------------------------------------------------
find_nginx() { command -v nginx 2>/dev/null || { [[ -x /usr/sbin/nginx ]] && echo /usr/sbin/nginx; } || true; }
if [[ -n "$(find_nginx)" ]]; then
  log "nginx present: $("$(find_nginx)" -v 2>&1)"
else
  if [[ "$(id -u)" != 0 ]]; then
    log "nginx is missing and this is not root: run 'apt-get install nginx-light' as root"; exit 1
  fi
  log "installing nginx-light with apt-get"
  # Debian's postinst would start the packaged nginx service on port 80; a policy-rc.d that
  # answers 101 forbids that. Only ours is removed again; an existing one is left alone.
  made_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
    trap '[[ $made_policy == 1 ]] && rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq </dev/null
  timeout 900 apt-get install -y -qq --no-install-recommends nginx-light </dev/null >/dev/null
  [[ -n "$(find_nginx)" ]] || { log "nginx still not found after apt-get install"; exit 1; }
  log "installed: $("$(find_nginx)" -v 2>&1)"
fi

# --- the Node alternative and the plotting venv ------------------------------------------------
# shellcheck source=../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
npm_ci_pinned "$HERE/node-alternative"
pinned_venv "$ROOT/.cache/venv-bench" "$HERE/requirements.txt"
"$ROOT/.cache/venv-bench/bin/python" -c 'import matplotlib; print("bench-setup:   matplotlib", matplotlib.__version__)'

log "done"
