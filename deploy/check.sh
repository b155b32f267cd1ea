#!/usr/bin/env bash
# Checks deploy/ offline (no Docker engine or cluster needed): hadolint on the
# Dockerfile, kubernetes-validate (strict, Kubernetes 1.33 schemas) on the
# manifests, and `agui-gateway check-config` on the example configuration
# and on the ConfigMap's copy. Prints `N passed, M failed`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
log() { printf 'deploy-check: %s\n' "$*"; }
# shellcheck source=../scripts/lib/pinned.sh
source "$ROOT/scripts/lib/pinned.sh"
VENV="$ROOT/.cache/venv-deploy"
pinned_venv "$VENV" "$HERE/requirements.txt"
GATEWAY="${GATEWAY_BIN:-$ROOT/target/debug/agui-gateway}"

passed=0; failed=0
check() {
    local name=$1; shift
    if out=$("$@" 2>&1); then
        echo "ok $name"; passed=$((passed + 1))
    else
        echo "FAIL $name:"; echo "$out" | tail -20; failed=$((failed + 1))
    fi
}
check "hadolint Dockerfile" "$VENV/bin/hadolint" "$HERE/Dockerfile"
for manifest in "$HERE"/k8s/*.yaml; do
    check "kubernetes-validate ${manifest#"$ROOT"/}" "$VENV/bin/kubernetes-validate" --strict -k 1.33.0 "$manifest"
done
check "check-config deploy/config.example.toml" "$GATEWAY" check-config "$HERE/config.example.toml"
configmap_toml=$(mktemp)
trap 'rm -f "$configmap_toml"' EXIT
"$VENV/bin/python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["config.toml"])' "$HERE/k8s/configmap.yaml" > "$configmap_toml"
check "check-config (the ConfigMap's config.toml)" "$GATEWAY" check-config "$configmap_toml"
# Secrets belong in the Secret: no credential-looking header value in the
# configuration, and the Secret is where the Deployment reads them from.
no_secrets() {
    "$VENV/bin/python" - "$@" <<'PY'
import re, sys, tomllib
for path in sys.argv[1:]:
    config = tomllib.load(open(path, "rb"))
    for name, agent in config.get("agents", {}).items():
        for header in agent.get("headers", {}):
            if re.search(r"key|token|secret|auth|cookie|pass", header, re.I):
                sys.exit(f"{path}: agents.{name}.headers has {header}: use headers_env and the Secret")
PY
}
check "no secret in the configuration files" no_secrets "$HERE/config.example.toml" "$configmap_toml"
check "the Deployment reads the Secret" grep -q "secretName: agui-gateway" "$HERE/k8s/deployment.yaml"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
