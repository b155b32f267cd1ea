"""Shared runner for the framework test servers (standard library + uvicorn only).

``serve(build_app, host, port)`` binds the socket first (so ``--port 0`` is resolved before
the app is built), runs uvicorn on it with the app's lifespan, prints exactly one line
``READY <port>`` once uvicorn accepts connections, and exits with status 0 on SIGTERM/SIGINT.
With ``TLS_CERT`` (and ``TLS_KEY``) in the environment it serves HTTPS; with ``TLS_CLIENT_CA`` too,
it requires a client certificate signed by that CA.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from typing import Any, Callable


def parse_args(description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument('--host', default=os.environ.get('HOST', '127.0.0.1'))
    ap.add_argument('--port', type=int, default=int(os.environ.get('PORT', '0') or 0),
                    help='TCP port; 0 (the default) picks a free one.')
    if extra is not None:
        extra(ap)
    return ap.parse_args()


def serve(build_app: Callable[[str, int], Any], host: str, port: int, lifespan: str = 'on') -> None:
    """``lifespan='off'`` for apps without startup and shutdown hooks (the scenario agents)."""
    import uvicorn  # the venv of each server provides it

    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    actual_port = sock.getsockname()[1]
    url_host = f'[{host}]' if family == socket.AF_INET6 else host

    app = build_app(url_host, actual_port)
    # TLS_CERT / TLS_KEY serve HTTPS; TLS_CLIENT_CA also requires a client certificate signed by
    # that CA (mutual TLS). The gateway's upstream TLS tests set them.
    tls: dict[str, Any] = {}
    if os.environ.get('TLS_CERT'):
        import ssl
        tls = {'ssl_certfile': os.environ['TLS_CERT'], 'ssl_keyfile': os.environ.get('TLS_KEY')}
        if os.environ.get('TLS_CLIENT_CA'):
            tls.update(ssl_ca_certs=os.environ['TLS_CLIENT_CA'], ssl_cert_reqs=ssl.CERT_REQUIRED)
    config = uvicorn.Config(app, log_level=os.environ.get('LOG_LEVEL', 'warning').lower(),
                            access_log=False, lifespan=lifespan, timeout_graceful_shutdown=1, **tls)
    server = uvicorn.Server(config)

    # uvicorn re-raises the signal that stopped it once it has shut down; with these handlers
    # in place the re-raise is a no-op and the process exits with status 0. A signal that
    # arrives before uvicorn installs its own handlers stops it too.
    def stop(*_: Any) -> None:
        server.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)

    async def main() -> None:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        # Bounded: uvicorn either starts or its task ends (startup failure) well within 60 s.
        for _ in range(6000):
            if server.started or serving.done():
                break
            await asyncio.sleep(0.01)
        if server.started:
            sys.stdout.write(f'READY {actual_port}\n')
            sys.stdout.flush()
        else:
            server.should_exit = True
        await serving

    asyncio.run(main())
    if not server.started:
        sys.exit(1)
