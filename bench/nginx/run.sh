#!/usr/bin/env bash
# Usage: bench/nginx/run.sh UPSTREAM_PORT LISTEN_PORT
# Renders nginx.conf.template into the prefix dir ${NGINX_PREFIX:-/tmp/agui-bench-nginx-LISTEN_PORT}
# (wiped and recreated on each start) and execs nginx in the foreground, so this script's pid
# becomes the nginx master's pid (its one worker is a child of it). Listens on
# 127.0.0.1:LISTEN_PORT and proxies everything to http://127.0.0.1:UPSTREAM_PORT without
# buffering. nginx prints nothing when ready: poll the port. Stop it with SIGTERM (fast shutdown)
# or SIGQUIT (graceful). With NGINX_TLS_CERT and NGINX_TLS_KEY (PEM files) it terminates TLS
# with HTTP/2 by ALPN, as the gateway's --tls-cert/--tls-key. Run as root, it drops to nobody:nogroup first (via setpriv), so nginx
# never runs privileged.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { printf 'nginx/run.sh: %s\n' "$*" >&2; exit 2; }

[[ $# -eq 2 ]] || die "usage: run.sh UPSTREAM_PORT LISTEN_PORT"
UP="$1"; LISTEN="$2"
for p in "$UP" "$LISTEN"; do
  [[ "$p" =~ ^[0-9]+$ ]] && (( p >= 1 && p <= 65535 )) || die "bad port: $p"
done

NGINX="$(command -v nginx 2>/dev/null || true)"
[[ -n "$NGINX" ]] || { [[ -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx; } || true
[[ -n "$NGINX" ]] || die "nginx not found: run bench/setup.sh"

PREFIX="${NGINX_PREFIX:-${TMPDIR:-/tmp}/agui-bench-nginx-$LISTEN}"
case "$PREFIX" in /*) ;; *) die "NGINX_PREFIX must be absolute" ;; esac
rm -rf "$PREFIX"
mkdir -p "$PREFIX/temp"
listen_tls="" tls_lines=""
if [[ -n "${NGINX_TLS_CERT:-}" ]]; then
  [[ -r "$NGINX_TLS_CERT" && -r "${NGINX_TLS_KEY:-}" ]] || die "NGINX_TLS_CERT and NGINX_TLS_KEY must be readable files"
  # Copied into the prefix: nginx runs as nobody, who may not read the originals.
  cp "$NGINX_TLS_CERT" "$PREFIX/tls.pem"
  cp "$NGINX_TLS_KEY" "$PREFIX/tls.key"
  listen_tls=" ssl http2"
  tls_lines="ssl_certificate tls.pem; ssl_certificate_key tls.key; ssl_protocols TLSv1.2 TLSv1.3; http2_max_concurrent_streams 100;"
fi
sed -e "s/@UPSTREAM_PORT@/$UP/g" -e "s/@LISTEN_PORT@/$LISTEN/g" \
  -e "s/@LISTEN_TLS@/$listen_tls/g" -e "s/@TLS_LINES@/$tls_lines/g" \
  "$HERE/nginx.conf.template" > "$PREFIX/nginx.conf"

cmd=("$NGINX" -p "$PREFIX/" -c "$PREFIX/nginx.conf" -e stderr)
if [[ "$(id -u)" == 0 ]]; then
  chown -R nobody:nogroup "$PREFIX"
  cmd=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- "${cmd[@]}")
fi
"${cmd[@]}" -t -q || die "config test failed ($PREFIX/nginx.conf)"
printf 'nginx/run.sh: 127.0.0.1:%s -> 127.0.0.1:%s (prefix %s)\n' "$LISTEN" "$UP" "$PREFIX" >&2
exec "${cmd[@]}"
