# Sourced by the setup scripts: installs pinned dependencies into git-ignored
# places, skipping the work when a stamp says the same lock file (and the same
# interpreter) was installed before, so reruns take well under a second.
# Callers define `log` and run with `set -euo pipefail`.

pinned_sha() { sha256sum | cut -d' ' -f1; }

# npm_ci_pinned DIR: `npm ci` in DIR from its package-lock.json.
npm_ci_pinned() {
    local dir=$1
    command -v node >/dev/null || { log "node not found"; return 1; }
    command -v npm >/dev/null || { log "npm not found"; return 1; }
    local key stamp
    key="$( { cat "$dir/package-lock.json"; node --version; } | pinned_sha)"
    # Inside node_modules, so `npm ci` (which wipes node_modules) never
    # leaves a stale stamp behind.
    stamp="$dir/node_modules/.setup-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
        log "$dir/node_modules up to date"
        return 0
    fi
    log "npm ci in $dir"
    # --ignore-scripts: none of the locked packages needs an install script.
    (cd "$dir" && CI=true timeout 900 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error </dev/null)
    printf '%s\n' "$key" > "$stamp"
}

# pinned_venv VENV REQUIREMENTS: a venv with exactly the hash-pinned wheels.
pinned_venv() {
    local venv=$1 reqs=$2
    command -v python3 >/dev/null || { log "python3 not found"; return 1; }
    local key stamp
    # The lock file plus the interpreter, so a new Python rebuilds the venv.
    key="$( { cat "$reqs"; python3 -c 'import sys; print(sys.version)'; } | pinned_sha)"
    stamp="$venv/.setup-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
        log "$venv up to date"
        return 0
    fi
    log "creating $venv from $reqs"
    rm -rf "$venv"   # a half-installed or stale venv is not worth repairing
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    # --only-binary: never run an sdist's build.
    PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        timeout 900 "$venv/bin/python" -m pip install --quiet --require-hashes --only-binary :all: -r "$reqs" </dev/null
    printf '%s\n' "$key" > "$stamp"
}
