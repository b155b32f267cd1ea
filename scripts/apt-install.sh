#!/usr/bin/env bash
# Installs the Debian packages the tests need, when their command is missing:
#   scripts/apt-install.sh COMMAND=PACKAGE ...
# apt-get install --no-install-recommends, as root or through sudo; services
# are not started (the tests start their own, on loopback). Non-interactive.
set -euo pipefail
missing=()
for pair in "$@"; do
    command=${pair%%=*}
    package=${pair#*=}
    command -v "$command" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "present: $*"
    exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null 2>&1 || { echo "still missing: ${pair%%=*}" >&2; exit 1; }
done
