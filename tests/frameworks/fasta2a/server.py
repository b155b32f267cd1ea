"""Pydantic AI agent served by fasta2a (`agent_to_a2a`), driven by a scripted FunctionModel.

Run with the venv from ../setup.sh: `.cache/venv-fw-fasta2a/bin/python
tests/frameworks/fasta2a/server.py --port 0`. Prints `READY <port>`; SIGTERM stops it (status 0).

Scenario `tools` (the user's text contains the word): turn 1 streams "Let me check." and then
a tool call get_weather(city="Paris"); turn 2 (after the tool's return) streams "It is 21 °C in
Paris." in several deltas. Any other text gets one streamed reply. fasta2a never puts the tool
call on the wire; its final `result` artifact replaces the streamed text with the last turn's.
"""
from __future__ import annotations

import json
import os
import sys
from typing import AsyncIterator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from fasta2a.pydantic_ai import agent_to_a2a  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel  # noqa: E402

FINAL_DELTAS = ['It is ', '21 °C ', 'in ', 'Paris.']
HELLO_DELTAS = ['Hello from ', 'the scripted ', 'Pydantic AI agent.']


def _turn(messages: list[ModelMessage]) -> str:
    """`call`, `answer` or `hello`: what the model says next."""
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest) and any(
            isinstance(p, ToolReturnPart) and p.tool_name == 'get_weather' for p in last.parts):
        return 'answer'
    text = ''
    if isinstance(last, ModelRequest):
        text = ' '.join(p.content for p in last.parts
                        if isinstance(p, UserPromptPart) and isinstance(p.content, str))
    return 'call' if 'tools' in text.lower() else 'hello'


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The same script without streaming (used if fasta2a falls back to `agent.run`)."""
    turn = _turn(messages)
    if turn == 'call':
        return ModelResponse(parts=[TextPart('Let me check.'), ToolCallPart(
            'get_weather', {'city': 'Paris'}, tool_call_id='call-1')])
    return ModelResponse(parts=[TextPart(''.join(FINAL_DELTAS if turn == 'answer' else HELLO_DELTAS))])


async def scripted_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator:
    turn = _turn(messages)
    if turn == 'call':
        yield 'Let me check.'
        yield {0: DeltaToolCall(name='get_weather', json_args=json.dumps({'city': 'Paris'}),
                                tool_call_id='call-1')}
        return
    for delta in FINAL_DELTAS if turn == 'answer' else HELLO_DELTAS:
        yield delta


def build_agent() -> Agent:
    agent = Agent(FunctionModel(scripted, stream_function=scripted_stream), name='scripted_pai_agent')

    @agent.tool_plain
    def get_weather(city: str) -> dict:
        """Returns the current weather of a city."""
        return {'temp_c': 21, 'sky': 'sunny'}

    return agent


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0])
    _serve.serve(lambda host, port: agent_to_a2a(
        build_agent(), url=f'http://{host}:{port}', description='Scripted Pydantic AI agent.'),
        args.host, args.port)


if __name__ == '__main__':
    main()
