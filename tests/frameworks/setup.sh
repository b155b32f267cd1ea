#!/usr/bin/env bash
# Installs the agent frameworks the recorded test peers need, pinned and hash-checked, into
# git-ignored venvs (one per framework: their a2a-sdk / fastapi pins conflict):
#   <repo>/.cache/venv-fw-adk         google-adk[a2a] 2.13.0 + a2a-sdk 1.3.0
#   <repo>/.cache/venv-fw-fasta2a     fasta2a 2.1.1 + pydantic-ai-slim 2.68.0
#   <repo>/.cache/venv-fw-strands     strands-agents[a2a] 1.62.0 + a2a-sdk 0.3.26
#   <repo>/.cache/venv-fw-langgraph   langgraph-cli[inmem] 0.4.40 + langgraph-api 0.16.7
#   <repo>/.cache/venv-fw-agentstack  agentstack-sdk 0.7.1 (mcp<2, fastapi<0.125)
#   <repo>/.cache/venv-fw-crewai      crewai[a2a] 1.15.30 + a2a-sdk 0.3.26
#   <repo>/.cache/venv-fw-maf         agent-framework-a2a 1.0.0b261022 + agent-framework-core 1.23.0
#                                     + a2a-sdk 1.3.0
# Idempotent and non-interactive (scripts/lib/pinned.sh); reruns take well under a second.
# Works from any cwd. `setup.sh adk strands` installs only the named frameworks.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { printf 'frameworks-setup: %s\n' "$*"; }
# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"

# pinned_venv_with_sdist VENV REQUIREMENTS BUILD_REQUIREMENTS SDIST: like pinned_venv, but the
# one package SDIST (which publishes no wheel) is built from its hash-pinned source archive.
# The build backend comes from BUILD_REQUIREMENTS (hash-pinned too) and the build runs without
# isolation, so nothing unpinned is downloaded. Every other package is still wheel-only.
pinned_venv_with_sdist() {
    local venv=$1 reqs=$2 build_reqs=$3 sdist=$4
    command -v python3 >/dev/null || { log "python3 not found"; return 1; }
    local key stamp
    key="$( { cat "$reqs" "$build_reqs"; echo "$sdist"; python3 -c 'import sys; print(sys.version)'; } | pinned_sha)"
    stamp="$venv/.setup-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
        log "$venv up to date"
        return 0
    fi
    log "creating $venv from $reqs (building $sdist from source)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        timeout 900 "$venv/bin/python" -m pip install --quiet --require-hashes --only-binary :all: \
        -r "$build_reqs" </dev/null
    PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        timeout 900 "$venv/bin/python" -m pip install --quiet --require-hashes --only-binary :all: \
        --no-binary "$sdist" --no-build-isolation -r "$reqs" </dev/null
    printf '%s\n' "$key" > "$stamp"
}

ALL=(adk fasta2a strands langgraph agentstack crewai maf)
if (($#)); then SELECTED=("$@"); else SELECTED=("${ALL[@]}"); fi

# The distribution whose version identifies each framework.
dist_of() {
    case $1 in
        adk) echo google-adk a2a-sdk ;;
        fasta2a) echo fasta2a pydantic-ai-slim ;;
        strands) echo strands-agents a2a-sdk ;;
        langgraph) echo langgraph-api langgraph-cli langgraph langchain-core ;;
        agentstack) echo agentstack-sdk a2a-sdk ;;
        crewai) echo crewai a2a-sdk ;;
        maf) echo agent-framework-a2a agent-framework-core a2a-sdk ;;
        *) return 1 ;;
    esac
}

for name in "${SELECTED[@]}"; do
    dist_of "$name" >/dev/null || { log "unknown framework: $name (known: ${ALL[*]})"; exit 2; }
    venv="$ROOT/.cache/venv-fw-$name"
    if [[ $name == langgraph ]]; then
        # blockbuster (a dependency of langgraph-runtime-inmem) needs forbiddenfruit, which is
        # published only as a source archive.
        pinned_venv_with_sdist "$venv" "$HERE/langgraph/requirements.txt" \
            "$HERE/langgraph/build-requirements.txt" forbiddenfruit
    else
        pinned_venv "$venv" "$HERE/$name/requirements.txt"
    fi
done

for name in "${SELECTED[@]}"; do
    # shellcheck disable=SC2046
    "$ROOT/.cache/venv-fw-$name/bin/python" - "$name" $(dist_of "$name") <<'PY'
import sys
from importlib.metadata import version
name, dists = sys.argv[1], sys.argv[2:]
print(f"frameworks-setup:   {name}: " + ", ".join(f"{d} {version(d)}" for d in dists))
PY
done
log "done"
