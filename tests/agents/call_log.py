"""CALL_LOG: every call a test agent receives, one JSON line each, for tests that count them.

With ``CALL_LOG=<path>`` set, each request is appended to that file when it arrives, as
``{"t": <time.monotonic()>, "method": "<name>"}``. ``t`` is CLOCK_MONOTONIC seconds on Linux, so
lines from several processes (and a test's own clock) compare. ``method`` is the JSON-RPC
``method`` of a JSON-RPC call, ``"<HTTP method> <path>"`` of any other HTTP request (REST calls,
card fetches), and the full gRPC method (``/lf.a2a.v1.A2AService/GetTask``) of a gRPC call.

Each line is one ``os.write`` on an ``O_APPEND`` descriptor: written through at once, and whole
even when several agents share the file. Standard library only (both venvs import it).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

_fd: int | None = None


def enabled() -> bool:
    return bool(os.environ.get('CALL_LOG'))


def record(method: str) -> None:
    """Append one line (a no-op without CALL_LOG)."""
    global _fd
    path = os.environ.get('CALL_LOG')
    if not path:
        return
    if _fd is None:
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    line = json.dumps({'t': time.monotonic(), 'method': method}) + '\n'
    os.write(_fd, line.encode())


def _jsonrpc_methods(body: bytes) -> list[str]:
    """The ``method`` of a JSON-RPC request (each of a batch); empty when the body is not one."""
    try:
        doc = json.loads(body)
    except ValueError:
        return []
    calls = doc if isinstance(doc, list) else [doc]
    return [c['method'] for c in calls
            if isinstance(c, dict) and 'jsonrpc' in c and isinstance(c.get('method'), str)]


def wrap(app: Any) -> Any:
    """``app`` behind an ASGI middleware that logs each HTTP request (``app`` itself without CALL_LOG).

    A POST body is read whole to find its JSON-RPC method, then handed to the app unchanged: the
    app's ``receive`` replays the buffered messages first, then reads on (``http.disconnect``).
    """
    if not enabled():
        return app

    async def logged(scope: dict, receive: Any, send: Any) -> None:
        if scope['type'] != 'http':
            return await app(scope, receive, send)
        label = f"{scope['method']} {scope['path']}"
        if scope['method'] != 'POST':
            record(label)
            return await app(scope, receive, send)
        buffered: list[dict] = []
        while True:
            message = await receive()
            buffered.append(message)
            if message['type'] != 'http.request' or not message.get('more_body'):
                break
        body = b''.join(m.get('body', b'') for m in buffered if m['type'] == 'http.request')
        for method in _jsonrpc_methods(body) or [label]:
            record(method)

        async def replay() -> dict:
            return buffered.pop(0) if buffered else await receive()

        return await app(scope, replay, send)

    return logged
