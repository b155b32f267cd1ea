"""Agno agent served by AgentOS's A2A interface, driven by a scripted model.

Run with the venv from ../setup.sh: `.cache/venv-fw-agno/bin/python
tests/frameworks/agno/server.py --port 0`. Prints `READY <port>`; SIGTERM stops it (status 0).
The A2A endpoint is `/a2a/agents/scripted-agno-agent/v1/message:stream` (AgentOS's A2A router;
it answers any JSON-RPC method name there with a stream).

Scenario `weather` (every request): turn 1 streams the model thought "I should look " / "up the
weather." as `reasoning_content` deltas, then the tool call get_weather(city="Paris") with id
`call_weather_1`. The tool returns "21C". Turn 2 (after the tool result) streams "It is ",
"21C ", "in Paris.".
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, AsyncIterator, Iterator

# Before agno is imported: no telemetry, no calls home.
os.environ.setdefault('AGNO_TELEMETRY', 'false')
os.environ.setdefault('AGNO_DEBUG', 'false')

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from agno.agent import Agent  # noqa: E402
from agno.models.base import Model  # noqa: E402
from agno.models.message import Message  # noqa: E402
from agno.models.response import ModelResponse  # noqa: E402
from agno.os import AgentOS  # noqa: E402

AGENT_ID = 'scripted-agno-agent'
THOUGHT = ['I should look ', 'up the weather.']
ANSWER = ['It is ', '21C ', 'in Paris.']
TOOL_CALL = {'id': 'call_weather_1', 'type': 'function',
             'function': {'name': 'get_weather', 'arguments': json.dumps({'city': 'Paris'})}}


def get_weather(city: str) -> str:
    """Returns the current weather of a city."""
    return '21C'


def _script(messages: list[Message]) -> list[ModelResponse]:
    """The deltas of the next model turn: after a tool result the answer, else thought + call."""
    if messages and messages[-1].role == 'tool':
        return [ModelResponse(role='assistant', content=d) for d in ANSWER]
    return ([ModelResponse(role='assistant', reasoning_content=d) for d in THOUGHT]
            + [ModelResponse(role='assistant', tool_calls=[dict(TOOL_CALL)])])


class ScriptedModel(Model):
    """An agno `Model` whose turns are fixed by the conversation so far (no provider, no network)."""

    def __init__(self) -> None:
        super().__init__(id='scripted', name='ScriptedModel', provider='scripted')

    def invoke(self, messages: list[Message], assistant_message: Message, **kwargs: Any) -> ModelResponse:
        deltas = _script(messages)
        full = ModelResponse(role='assistant')
        full.content = ''.join(d.content for d in deltas if d.content) or None
        full.reasoning_content = ''.join(d.reasoning_content for d in deltas if d.reasoning_content) or None
        full.tool_calls = [tc for d in deltas for tc in d.tool_calls]
        return full

    async def ainvoke(self, messages: list[Message], assistant_message: Message, **kwargs: Any) -> ModelResponse:
        return self.invoke(messages, assistant_message, **kwargs)

    def invoke_stream(self, messages: list[Message], assistant_message: Message, **kwargs: Any) -> Iterator[ModelResponse]:
        yield from _script(messages)

    async def ainvoke_stream(self, messages: list[Message], assistant_message: Message,
                             **kwargs: Any) -> AsyncIterator[ModelResponse]:
        for delta in _script(messages):
            yield delta

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response


def build_app(host: str, port: int):
    agent = Agent(id=AGENT_ID, name='scripted_agno_agent', description='Scripted Agno agent.',
                  model=ScriptedModel(), tools=[get_weather], telemetry=False)
    agent_os = AgentOS(id='scripted-agno-os', agents=[agent], a2a_interface=True, telemetry=False)
    return agent_os.get_app()


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0])
    _serve.serve(build_app, args.host, args.port)


if __name__ == '__main__':
    main()
