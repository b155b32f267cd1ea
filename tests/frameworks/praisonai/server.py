"""PraisonAI agent served by its own A2A router (`praisonaiagents.ui.a2a.A2A`), scripted model.

Run with the venv from ../setup.sh: `.cache/venv-fw-praisonai/bin/python
tests/frameworks/praisonai/server.py --port 0`. Prints `READY <port>`;
SIGTERM stops it (status 0). The A2A JSON-RPC endpoint is `POST /a2a` (the router's own path);
the card is at `/.well-known/agent.json`.

`ScriptedLlm` subclasses `praisonaiagents.llm.llm.LLM` and replaces only the calls that would
reach a provider (`_completion_with_retry` and its async twin), answering with litellm stream
chunks, so the agent's own tool loop runs the tool and feeds its result back.

Scenario `weather` (the word in the user's text picks it):
* turn 1: the reasoning "I should look up the weather." as two `reasoning_content` deltas, then
  the tool call get_weather({"city": "Paris"}) with id call_weather_1;
* the tool `get_weather` returns "21C";
* turn 2 (a `tool` message from get_weather is the last message): "It is ", "21C ", "in Paris.".
Any other text gets the one-chunk reply "Say weather.".

The agent runs with `output={'stream': True}`, so both turns come from the model as streamed
chunks; PraisonAI's default (`output='silent'`) asks for whole responses instead. Neither that
nor `reasoning_steps=True` changes the A2A stream: `message/stream` sends only the string that
`agent.chat` returns, in one artifact.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

# No telemetry, no model-cost download at import, nothing to a provider.
os.environ.setdefault('PRAISONAI_TELEMETRY_DISABLED', 'true')
os.environ.setdefault('PRAISONAI_DISABLE_TELEMETRY', 'true')
os.environ.setdefault('PRAISONAI_PERFORMANCE_DISABLED', 'true')
os.environ.setdefault('LITELLM_LOCAL_MODEL_COST_MAP', 'True')
os.environ.setdefault('LITELLM_TELEMETRY', 'False')
os.environ.setdefault('OPENAI_API_KEY', 'unused-scripted-model')


def _bundled_tiktoken_dir() -> str | None:
    """litellm's bundled tiktoken files: PraisonAI counts tokens with tiktoken, which would
    otherwise download its encoding (from a public blob store) on the first request."""
    import importlib.util

    spec = importlib.util.find_spec('litellm')
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], 'litellm_core_utils', 'tokenizers')
    return path if os.path.isdir(path) else None


if _bundled_tiktoken_dir():
    os.environ.setdefault('TIKTOKEN_CACHE_DIR', _bundled_tiktoken_dir())

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from praisonaiagents import Agent  # noqa: E402
from praisonaiagents.llm.llm import LLM  # noqa: E402
from praisonaiagents.ui.a2a import A2A  # noqa: E402

THOUGHT_DELTAS = ['I should look ', 'up the weather.']
ANSWER_DELTAS = ['It is ', '21C ', 'in Paris.']
CALL_ID = 'call_weather_1'


def get_weather(city: str) -> str:
    """Returns the current weather of a city."""
    return '21C'


def _turn(messages: list[dict]) -> str:
    """`call`, `answer` or `other`: what the model says next."""
    last = messages[-1] if messages else {}
    if last.get('role') == 'tool':
        return 'answer'
    text = ''
    for message in reversed(messages):
        if message.get('role') == 'user':
            content = message.get('content')
            if isinstance(content, list):
                content = ' '.join(p.get('text', '') for p in content if isinstance(p, dict))
            text = str(content or '')
            break
    return 'call' if 'weather' in text.lower() else 'other'


class ScriptedLlm(LLM):
    """An LLM whose provider calls are answered from the script (streamed or not)."""

    def __init__(self) -> None:
        super().__init__(model='scripted/weather')

    # -- what a provider would send ----------------------------------------------------------

    def _chunks(self, turn: str) -> list[Any]:
        from litellm import ModelResponseStream, StreamingChoices
        from litellm.types.utils import ChatCompletionDeltaToolCall, Delta, Function

        def chunk(delta: Any, finish: str | None = None) -> Any:
            return ModelResponseStream(id=f'scripted-{turn}', model=self.model, choices=[
                StreamingChoices(index=0, delta=delta, finish_reason=finish)])

        if turn == 'call':
            out = [chunk(Delta(role='assistant', content=None, reasoning_content=d))
                   for d in THOUGHT_DELTAS]
            out.append(chunk(Delta(role='assistant', content=None, tool_calls=[
                ChatCompletionDeltaToolCall(id=CALL_ID, index=0, type='function', function=Function(
                    name='get_weather', arguments=json.dumps({'city': 'Paris'})))]), 'tool_calls'))
            return out
        deltas = ANSWER_DELTAS if turn == 'answer' else ['Say weather.']
        out = [chunk(Delta(role='assistant', content=d)) for d in deltas]
        out[-1].choices[0].finish_reason = 'stop'
        return out

    def _response(self, turn: str) -> Any:
        from litellm import Choices, Message, ModelResponse

        if turn == 'call':
            thought = ''.join(THOUGHT_DELTAS)
            # Where litellm puts a provider's reasoning; PraisonAI reads it from both places.
            message = Message(role='assistant', content=None, reasoning_content=thought,
                              provider_specific_fields={'reasoning_content': thought},
                              tool_calls=[{'id': CALL_ID, 'type': 'function', 'function': {
                                  'name': 'get_weather',
                                  'arguments': json.dumps({'city': 'Paris'})}}])
            finish = 'tool_calls'
        else:
            text = ''.join(ANSWER_DELTAS) if turn == 'answer' else 'Say weather.'
            message = Message(role='assistant', content=text,
                              provider_specific_fields={'reasoning_content': None})
            finish = 'stop'
        return ModelResponse(id=f'scripted-{turn}', model=self.model, choices=[
            Choices(index=0, finish_reason=finish, message=message)])

    # -- the provider calls this class replaces ----------------------------------------------

    def _completion_with_retry(self, **params: Any) -> Any:
        turn = _turn(list(params.get('messages') or []))
        if params.get('stream'):
            return iter(self._chunks(turn))
        return self._response(turn)

    async def _acompletion_with_retry(self, **params: Any) -> Any:
        turn = _turn(list(params.get('messages') or []))
        if params.get('stream'):
            async def gen():
                for c in self._chunks(turn):
                    yield c
            return gen()
        return self._response(turn)

    def _supports_streaming_tools(self) -> bool:
        return True

    def _supports_responses_api(self) -> bool:
        return False


def build_agent() -> Agent:
    return Agent(name='scripted_praisonai_agent', role='Weather assistant',
                 instructions='Answer weather questions with the get_weather tool.',
                 llm=ScriptedLlm(), tools=[get_weather], output={'stream': True})


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0])

    def build_app(host: str, port: int):
        from fastapi import FastAPI

        a2a = A2A(agent=build_agent(), url=f'http://{host}:{port}/a2a',
                  description='Scripted PraisonAI agent.')
        app = FastAPI()
        app.include_router(a2a.get_router())
        return app

    _serve.serve(build_app, args.host, args.port)


if __name__ == '__main__':
    main()
