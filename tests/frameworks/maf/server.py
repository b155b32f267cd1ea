"""Microsoft Agent Framework agent served by `agent_framework_a2a.A2AExecutor`, driven by a
scripted chat client.

Run with the venv from ../setup.sh: `.cache/venv-fw-maf/bin/python tests/frameworks/maf/server.py
--port 0 [--no-stream]`. Prints `READY <port>`; SIGTERM stops it (status 0).

The app is the one the A2AExecutor docstring shows: a2a-sdk 1.x `DefaultRequestHandler` with
`A2AExecutor(agent, stream=True)` (`--no-stream`: `stream=False`), `InMemoryTaskStore`, and the
routes from `create_agent_card_routes` and `create_jsonrpc_routes(handler, '/')`. The v0.3
compatibility layer is switched on (`enable_v0_3_compat=True`), so the endpoint answers both
`message/stream` (v0.3) and `SendStreamingMessage` (v1.0, header `A2A-Version: 1.0`).

Scenario `text` (the only one; every request gets it): the chat client answers
"Hello from the Agent Framework." in five text updates and an empty one with finish_reason
"stop", all sharing one message_id (as a real provider's stream does). Without streaming it
returns the same text as one ChatResponse.
"""
from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

# The imports below take a second or more; a stop request in that window still exits
# with status 0. _serve.serve installs its own handlers later.
for _sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(_sig, lambda *_: sys.exit(0))

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from agent_framework import (  # noqa: E402
    Agent, BaseChatClient, ChatResponse, ChatResponseUpdate, Content, Message,
)
from agent_framework_a2a import A2AExecutor  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

DELTAS = ['Hello ', 'from ', 'the ', 'Agent ', 'Framework.']
MODEL = 'scripted'


class ScriptedChatClient(BaseChatClient):
    """A chat client whose every answer is DELTAS (streamed) or their concatenation."""

    OTEL_PROVIDER_NAME = 'scripted'

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                            options: Mapping[str, Any], **kwargs: Any):
        response_id = f'resp-{uuid.uuid4().hex}'
        message_id = f'msg-{uuid.uuid4().hex}'
        if stream:
            async def updates() -> AsyncIterator[ChatResponseUpdate]:
                await self._validate_options(options)
                for delta in DELTAS:
                    yield ChatResponseUpdate(role='assistant', contents=[Content.from_text(delta)],
                                             response_id=response_id, message_id=message_id,
                                             model=MODEL)
                yield ChatResponseUpdate(role='assistant', contents=[], response_id=response_id,
                                         message_id=message_id, model=MODEL,
                                         finish_reason='stop')

            return self._build_response_stream(updates())

        async def response() -> ChatResponse:
            await self._validate_options(options)
            return ChatResponse(
                messages=[Message(role='assistant', contents=[Content.from_text(''.join(DELTAS))],
                                  message_id=message_id)],
                response_id=response_id, model=MODEL, finish_reason='stop')

        return response()


def build_app(host: str, port: int, stream: bool) -> Starlette:
    agent = Agent(client=ScriptedChatClient(), name='scripted_maf_agent',
                  description='Scripted Microsoft Agent Framework agent.',
                  instructions='Greet the user.')
    card = AgentCard(
        name='scripted_maf_agent',
        description='Scripted Microsoft Agent Framework agent.',
        version='1.0.0',
        default_input_modes=['text'],
        default_output_modes=['text'],
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[AgentInterface(url=f'http://{host}:{port}/',
                                             protocol_binding='JSONRPC', protocol_version='1.0')],
        skills=[AgentSkill(id='greet', name='Greet', description='Greets the user.',
                           tags=['greeting'])],
    )
    handler = DefaultRequestHandler(agent_executor=A2AExecutor(agent, stream=stream),
                                    task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card),
                             *create_jsonrpc_routes(handler, '/', enable_v0_3_compat=True)])


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0], lambda ap: ap.add_argument(
        '--no-stream', action='store_true', help='A2AExecutor(agent, stream=False)'))
    _serve.serve(lambda host, port: build_app(host, port, not args.no_stream), args.host, args.port)


if __name__ == '__main__':
    main()
