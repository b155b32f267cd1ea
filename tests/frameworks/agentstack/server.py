"""Agent Stack (agentstack-sdk) A2A server with a scripted generator agent: no LLM, no network.

Run with the venv from ../setup.sh: `.cache/venv-fw-agentstack/bin/python
tests/frameworks/agentstack/server.py --port 0`. Prints `READY <port>`; SIGTERM stops it
(status 0). JSON-RPC is served at `/jsonrpc/`; self-registration with a platform is off.

Scenarios (a word of the user's text picks one):
* `trajectory`: two trajectory updates (group g1), then the answer in three yielded strings.
* `citation`: one text message carrying citation metadata for "Python" (indices 0-6).
* `approval`: a tool-call approval request (interactions/approval/v1), so the task ends
  input-required; a follow-up whose message metadata carries `{"decision": "approve"}` under the
  extension URI finishes with "Approved: deleted /tmp/report.txt." ("Rejected." otherwise).
* anything else: "Hello from the scripted Agent Stack agent.".
"""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from typing import Annotated, Any

from a2a.types import Message

from agentstack_sdk.a2a.extensions.interactions.approval import (
    ApprovalExtensionParams, ApprovalExtensionServer, ApprovalExtensionSpec, ToolCallApprovalRequest,
)
from agentstack_sdk.a2a.extensions.ui.citation import (
    Citation, CitationExtensionServer, CitationExtensionSpec,
)
from agentstack_sdk.a2a.extensions.ui.trajectory import (
    TrajectoryExtensionServer, TrajectoryExtensionSpec,
)
from agentstack_sdk.server import Server
from agentstack_sdk.server.context import RunContext

READY_TIMEOUT = 60.0


def _user_text(message: Message) -> str:
    texts = []
    for part in message.parts or []:
        text = getattr(part.root, 'text', None)
        if isinstance(text, str):
            texts.append(text)
    return ' '.join(texts).lower()


def build_server() -> Server:
    server = Server()

    @server.agent(name='scripted_agentstack_agent', description='Scripted Agent Stack agent.')
    async def scripted(
        message: Message,
        context: RunContext,
        trajectory: Annotated[TrajectoryExtensionServer, TrajectoryExtensionSpec()],
        citation: Annotated[CitationExtensionServer, CitationExtensionSpec()],
        approval: Annotated[ApprovalExtensionServer, ApprovalExtensionSpec(ApprovalExtensionParams())],
    ):
        text = _user_text(message)
        if 'trajectory' in text:
            yield trajectory.trajectory_metadata(title='Searching', content='Looking up sources.',
                                                 group_id='g1')
            yield trajectory.trajectory_metadata(title='Searching', content='Found 2 sources.',
                                                 group_id='g1')
            for delta in ('Python ', 'leads ', 'AI.'):
                yield delta
        elif 'citation' in text:
            yield citation.message(text='Python leads AI adoption.', citations=[Citation(
                start_index=0, end_index=6, url='https://example.com/python', title='Python',
                description='Python usage survey')])
        elif 'approval' in text:
            response = await approval.request_approval(ToolCallApprovalRequest(
                name='delete_file', title='Delete file', description='Deletes a file.',
                input={'path': '/tmp/report.txt'}), context=context)
            yield 'Approved: deleted /tmp/report.txt.' if response.approved else 'Rejected.'
        else:
            yield 'Hello from the scripted Agent Stack agent.'

    return server


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--host', default=os.environ.get('HOST', '127.0.0.1'))
    ap.add_argument('--port', type=int, default=int(os.environ.get('PORT', '0') or 0))
    args = ap.parse_args()

    # Bind first so --port 0 is resolved, then hand the socket to uvicorn by file descriptor.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = build_server()

    # uvicorn re-raises the signal that stopped it; with these handlers that is a no-op.
    def stop(*_: Any) -> None:
        server.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)

    async def run() -> bool:
        serving = asyncio.create_task(server.serve(
            host=args.host, port=port, fd=sock.fileno(), self_registration=False,
            configure_logger=False, log_level=os.environ.get('LOG_LEVEL', 'warning').lower(),
            access_log=False, timeout_graceful_shutdown=1))
        started = False
        for _ in range(int(READY_TIMEOUT / 0.01)):
            if serving.done():
                break
            if server.server is not None and server.server.started:
                started = True
                break
            await asyncio.sleep(0.01)
        if started:
            sys.stdout.write(f'READY {port}\n')
            sys.stdout.flush()
        else:
            server.should_exit = True
        await serving
        return started

    if not asyncio.run(run()):
        sys.exit(1)


if __name__ == '__main__':
    main()
