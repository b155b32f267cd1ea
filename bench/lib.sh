# Shared by the bench scripts (source it): a work directory and the
# processes started, both cleaned up on exit, and waits bounded to 20 s.
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# wait_line FILE PATTERN: the first match of PATTERN in FILE, waiting up to 20 s.
wait_line() {
    for _ in $(seq 200); do
        if grep -qE "$2" "$1" 2>/dev/null; then grep -oE "$2" "$1" | head -1; return 0; fi
        sleep 0.1
    done
    echo "timed out waiting for $2 in $1" >&2; cat "$1" >&2; return 1
}

# wait_port PORT: until something listens on loopback PORT, up to 20 s.
wait_port() {
    for _ in $(seq 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "port $1 never opened" >&2; return 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# make_tls_certs: a CA and a certificate for 127.0.0.1 it signed, made with
# openssl in $WORK: $WORK/tls-ca.pem (what loadgen trusts), tls.pem, tls.key.
make_tls_certs() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=agui-bench CA" -keyout "$WORK/tls-ca.key" -out "$WORK/tls-ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=127.0.0.1" -keyout "$WORK/tls.key" -out "$WORK/tls.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' > "$WORK/tls.ext"
    openssl x509 -req -in "$WORK/tls.csr" -CA "$WORK/tls-ca.pem" -CAkey "$WORK/tls-ca.key" \
        -CAcreateserial -days 2 -extfile "$WORK/tls.ext" -out "$WORK/tls.pem" 2>/dev/null
}
