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
#   <repo>/.cache/venv-fw-praisonai   praisonaiagents[llm] 1.7.17 (litellm 1.105.7) + fastapi 0.165.0
#   <repo>/.cache/venv-fw-kagent      kagent-adk 0.10.4 + google-adk 1.39.1 + a2a-sdk 0.3.26
#                                     (pip 26.3 from kagent/pip-requirements.txt first)
#   <repo>/.cache/venv-fw-beeai       beeai-framework[a2a] 0.1.85 + a2a-sdk 0.3.26 (litellm 1.110.2)
#   <repo>/.cache/venv-fw-agno        agno[os,a2a] 3.1.10 + a2a-sdk 0.3.26
# Node peers (a package-lock.json in their folder) get `npm ci --ignore-scripts` into
# <name>/node_modules instead of a venv:
#   voltagent/node_modules   @voltagent/core 2.10.0 + @voltagent/a2a-server 2.0.3
#                            + @voltagent/server-hono 2.0.14 + ai 6.0.326
#   mastra/node_modules      @mastra/core 0.24.9 + @mastra/deployer 0.24.9 + @mastra/server
#                            0.24.9 + ai 5.0.277 (Mastra 1.x needs Node >= 22.13)
# Idempotent and non-interactive (scripts/lib/pinned.sh); reruns take well under a second.
# Works from any cwd. `setup.sh adk strands` installs only the named frameworks.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { printf 'frameworks-setup: %s\n' "$*"; }
# shellcheck source=../../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"

# pinned_venv_after VENV FIRST_REQUIREMENTS REQUIREMENTS [PIP_ARGS...]: like pinned_venv, but
# the hash-pinned FIRST_REQUIREMENTS go in first, then REQUIREMENTS with PIP_ARGS. Two peers need
# it:
# - LangGraph: forbiddenfruit (which blockbuster, a dependency of langgraph-runtime-inmem, needs)
#   is published only as a source archive. It is built from its hash-pinned sdist without
#   isolation (`--no-binary forbiddenfruit --no-build-isolation`), its build backend (setuptools)
#   coming from FIRST_REQUIREMENTS, so nothing unpinned is downloaded.
# - kagent: the pip 23.2 of a fresh Python 3.11 venv resolves a dependency's extras requirement
#   (`pkg[extra]`) to the newest release even when `pkg` is pinned lower, and then fails
#   --require-hashes; FIRST_REQUIREMENTS is a newer pip.
# Every other package is still wheel-only.
pinned_venv_after() {
    local venv=$1 first=$2 reqs=$3
    shift 3
    command -v python3 >/dev/null || { log "python3 not found"; return 1; }
    local key stamp
    key="$( { cat "$reqs" "$first"; echo "$*"; python3 -c 'import sys; print(sys.version)'; } | pinned_sha)"
    stamp="$venv/.setup-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
        log "$venv up to date"
        return 0
    fi
    log "creating $venv from $first, then $reqs"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    local pip=("$venv/bin/python" -m pip install --quiet --require-hashes --only-binary :all:)
    PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 timeout 900 "${pip[@]}" -r "$first" </dev/null
    PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 timeout 900 "${pip[@]}" "$@" -r "$reqs" </dev/null
    printf '%s\n' "$key" > "$stamp"
}

ALL=(adk fasta2a strands langgraph agentstack crewai maf praisonai beeai agno voltagent mastra kagent)
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
        praisonai) echo praisonaiagents litellm fastapi ;;
        kagent) echo kagent-adk google-adk a2a-sdk ;;
        beeai) echo beeai-framework a2a-sdk ;;
        agno) echo agno a2a-sdk ;;
        voltagent) echo @voltagent/core @voltagent/a2a-server @voltagent/server-hono ai ;;
        mastra) echo @mastra/core @mastra/server @mastra/deployer ai ;;
        *) return 1 ;;
    esac
}

for name in "${SELECTED[@]}"; do
    dist_of "$name" >/dev/null || { log "unknown framework: $name (known: ${ALL[*]})"; exit 2; }
    venv="$ROOT/.cache/venv-fw-$name"
    if [[ -f "$HERE/$name/package-lock.json" ]]; then
        # A Node peer (server.mjs): `npm ci` into <name>/node_modules, no venv.
        npm_ci_pinned "$HERE/$name"
    elif [[ $name == langgraph ]]; then
        pinned_venv_after "$venv" "$HERE/langgraph/build-requirements.txt" \
            "$HERE/langgraph/requirements.txt" --no-binary forbiddenfruit --no-build-isolation
    elif [[ -f "$HERE/$name/pip-requirements.txt" ]]; then
        pinned_venv_after "$venv" "$HERE/$name/pip-requirements.txt" "$HERE/$name/requirements.txt"
    else
        pinned_venv "$venv" "$HERE/$name/requirements.txt"
    fi
done

for name in "${SELECTED[@]}"; do
    if [[ -f "$HERE/$name/package-lock.json" ]]; then
        # shellcheck disable=SC2046
        (cd "$HERE/$name" && node -e '
const [name, ...dists] = process.argv.slice(1);
const v = (d) => require(`./node_modules/${d}/package.json`).version;
console.log(`frameworks-setup:   ${name}: ` + dists.map((d) => `${d} ${v(d)}`).join(", "));
' "$name" $(dist_of "$name"))
        continue
    fi
    # shellcheck disable=SC2046
    "$ROOT/.cache/venv-fw-$name/bin/python" - "$name" $(dist_of "$name") <<'PY'
import sys
from importlib.metadata import version
name, dists = sys.argv[1], sys.argv[2:]
print(f"frameworks-setup:   {name}: " + ", ".join(f"{d} {version(d)}" for d in dists))
PY
done
log "done"
