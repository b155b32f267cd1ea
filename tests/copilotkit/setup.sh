#!/usr/bin/env bash
# Installs the CopilotKit harness's node packages, pinned, into the git-ignored
#   tests/copilotkit/node_modules   @copilotkit/runtime 1.75.0, @copilotkit/core 1.75.0,
#                                   @ag-ui/client 0.0.59, from package-lock.json
# Idempotent and non-interactive: skipped when the stamp in node_modules says it
# was installed from the very same lock file and node, so reruns take well under
# a second; a fresh `npm ci` is bounded (900 s, scripts/lib/pinned.sh). Works
# from any cwd.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

log() { printf 'setup: %s\n' "$*"; }

# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
npm_ci_pinned "$HERE"

# Name what got installed (exits non-zero when a package is missing).
(cd "$HERE" && node --input-type=module -e '
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/");
for (const name of ["@copilotkit/runtime", "@copilotkit/core", "@ag-ui/client"]) {
    console.log(`${name} ${require(`${name}/package.json`).version}`);
}
') | sed 's/^/setup: /'
log "done"
