"""BeeAI Framework RequirementAgent served by its A2AServer (jsonrpc), driven by a scripted model.

Run with the venv from ../setup.sh: `.cache/venv-fw-beeai/bin/python
tests/frameworks/beeai/server.py --port 0 [--trajectory]`. Prints `READY <port>`; SIGTERM stops
it (status 0). `--trajectory` registers the agent with `send_trajectory=True` (every new memory
message becomes a working status message); the default leaves it unset, as BeeAI does.

`A2AServer.serve()` builds a2a-sdk's `A2AStarletteApplication` (plus `/health`) and hands it
to `uvicorn.run`. Here `uvicorn.run` is swapped, for that one call, for a function that keeps
the app, so the framework's own app runs under `_serve.serve` on the socket bound beforehand.

Scenario `weather` (every request): turn 1 streams the reasoning "I should look " / "up the
weather." and then the tool call get_weather(city="Paris") with id `call_weather_1`. The tool
returns "21C". Turn 2 (after the tool result) streams "It is ", "21C ", "in Paris." as text. The
agent has `final_answer_as_tool=False`, so that text is accepted as the answer (the
RequirementAgent turns it into its `final_answer` tool call itself).
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, AsyncGenerator

# Before beeai_framework (and litellm, which it imports) is loaded: no downloads, no telemetry.
os.environ.setdefault('LITELLM_LOCAL_MODEL_COST_MAP', 'True')
os.environ.setdefault('BEEAI_LOG_LEVEL', 'WARNING')

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from beeai_framework.adapters.a2a.serve import server as a2a_serve  # noqa: E402
from beeai_framework.adapters.a2a.serve.server import A2AServer, A2AServerConfig  # noqa: E402
from beeai_framework.agents.requirement import RequirementAgent  # noqa: E402
from beeai_framework.backend import (  # noqa: E402
    AssistantMessage, ChatModel, ChatModelOutput, ChatModelParameters, MessageReasoningContent,
    MessageTextContent, MessageToolCallContent, ToolMessage,
)
from beeai_framework.backend.types import ChatModelInput  # noqa: E402
from beeai_framework.context import RunContext  # noqa: E402
from beeai_framework.memory import UnconstrainedMemory  # noqa: E402
from beeai_framework.tools import tool  # noqa: E402

THOUGHT = ['I should look ', 'up the weather.']
ANSWER = ['It is ', '21C ', 'in Paris.']


@tool
def get_weather(city: str) -> str:
    """Returns the current weather of a city."""
    return '21C'


def _chunks(messages: list[Any]) -> list[ChatModelOutput]:
    """The streamed chunks of the next turn: after the tool result the answer, else thought + call."""
    if messages and isinstance(messages[-1], ToolMessage):
        return [ChatModelOutput(output=[AssistantMessage(MessageTextContent(text=d))]) for d in ANSWER] + [
            ChatModelOutput(output=[], finish_reason='stop')]
    call = MessageToolCallContent(id='call_weather_1', tool_name='get_weather',
                                  args=json.dumps({'city': 'Paris'}))
    return ([ChatModelOutput(output=[AssistantMessage(MessageReasoningContent(text=d))]) for d in THOUGHT]
            + [ChatModelOutput(output=[AssistantMessage(call)], finish_reason='tool_calls')])


class ScriptedChatModel(ChatModel):
    """A BeeAI `ChatModel` whose turns are fixed by the conversation so far (no provider)."""

    @property
    def model_id(self) -> str:
        return 'scripted'

    @property
    def provider_id(self) -> str:
        return 'beeai'

    async def _create(self, input: ChatModelInput, run: RunContext) -> ChatModelOutput:
        return ChatModelOutput.from_chunks(_chunks(input.messages))

    async def _create_stream(self, input: ChatModelInput, run: RunContext) -> AsyncGenerator[ChatModelOutput]:
        for chunk in _chunks(input.messages):
            yield chunk

    async def clone(self) -> ScriptedChatModel:
        return ScriptedChatModel(parameters=self.parameters.model_copy())


def build_agent() -> RequirementAgent:
    return RequirementAgent(llm=ScriptedChatModel(parameters=ChatModelParameters(stream=True)),
                            tools=[get_weather], memory=UnconstrainedMemory(),
                            # The answer is plain streamed text, not a `final_answer` tool call
                            # (with True, BeeAI sends tool_choice "required" on every turn).
                            final_answer_as_tool=False,
                            name='scripted_beeai_agent', description='Scripted BeeAI agent.')


def build_app_factory(trajectory: bool):
    def build_app(host: str, port: int):
        server = A2AServer(config=A2AServerConfig(host=host, port=port, protocol='jsonrpc'))
        metadata: dict[str, Any] = {'send_trajectory': True} if trajectory else {}
        server.register(build_agent(), **metadata)
        captured: list[Any] = []
        real_run = a2a_serve.uvicorn.run
        a2a_serve.uvicorn.run = lambda app, **kwargs: captured.append(app)
        try:
            server.serve()
        finally:
            a2a_serve.uvicorn.run = real_run
        if len(captured) != 1:
            raise RuntimeError('A2AServer.serve() did not hand an app to uvicorn.run')
        return captured[0]
    return build_app


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0], lambda ap: ap.add_argument(
        '--trajectory', action='store_true', help='register the agent with send_trajectory=True'))
    _serve.serve(build_app_factory(args.trajectory), args.host, args.port)


if __name__ == '__main__':
    main()
