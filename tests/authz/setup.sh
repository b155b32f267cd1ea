#!/usr/bin/env bash
# Installs the authorization server's pinned npm packages (oidc-provider,
# jose) into tests/authz/node_modules (git-ignored), skipped when up to date.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { printf 'authz setup: %s\n' "$*"; }
# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
npm_ci_pinned "$HERE"
