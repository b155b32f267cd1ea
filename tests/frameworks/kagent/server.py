"""kagent (`kagent-adk`) A2A server driven by a scripted ADK model: no LLM, no kagent backend.

Run with the venv from ../setup.sh: `.cache/venv-fw-kagent/bin/python
tests/frameworks/kagent/server.py --port 0 [--stream]`. Prints `READY <port>`; SIGTERM stops it
(status 0).

The app is `kagent.adk.KAgentApp(...).build(local=True)`: kagent's own A2aAgentExecutor and
event converters (metadata keys `kagent_*`) in a2a-sdk 0.3's FastAPI app, with in-memory
sessions and tasks (local=True: no kagent controller, no token service). `--stream` is
`KAgentApp(stream=True)`, which runs ADK with `StreamingMode.SSE` (partial events on the wire);
the default is kagent's default, `stream=False`.

`ScriptedLlm` subclasses `google.adk.models.base_llm.BaseLlm`. Scenario `weather` (the word in
the user's text picks it):
* turn 1: the thought "I should look up the weather." (two partial chunks when streaming, then
  the whole turn), then the call get_weather({"city": "Paris"}) with id call_weather_1;
* the tool `get_weather` returns "21C";
* turn 2 (the last content holds get_weather's function response): "It is ", "21C ",
  "in Paris." (partial chunks when streaming, then the whole text "It is 21C in Paris.").
Any other text gets the reply "Say weather.".
"""
from __future__ import annotations

import os
import sys
from typing import AsyncGenerator

# kagent-core's OpenTelemetry setup stays off; nothing is exported.
os.environ.setdefault('OTEL_SDK_DISABLED', 'true')
os.environ.setdefault('OTEL_TRACES_EXPORTER', 'none')
os.environ.setdefault('OTEL_METRICS_EXPORTER', 'none')
os.environ.setdefault('OTEL_LOGS_EXPORTER', 'none')
os.environ.setdefault('ADK_DISABLE_TELEMETRY', 'true')

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from a2a.types import AgentCapabilities, AgentCard, AgentSkill  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.genai import types  # noqa: E402
from kagent.adk import KAgentApp  # noqa: E402

APP_NAME = 'scripted_kagent_agent'
THOUGHT_DELTAS = ['I should look ', 'up the weather.']
ANSWER_DELTAS = ['It is ', '21C ', 'in Paris.']
CALL_ID = 'call_weather_1'


def get_weather(city: str) -> str:
    """Returns the current weather of a city."""
    return '21C'


def _content(*parts: types.Part) -> types.Content:
    return types.Content(role='model', parts=list(parts))


class ScriptedLlm(BaseLlm):
    """A model whose every turn is fixed by the conversation so far."""

    model: str = 'scripted'

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents or []
        last = contents[-1] if contents else None
        answered = [p.function_response.name for p in (last.parts or []) if p.function_response] \
            if last is not None else []
        if 'get_weather' in answered:
            if stream:
                for delta in ANSWER_DELTAS:
                    yield LlmResponse(content=_content(types.Part(text=delta)), partial=True)
            yield LlmResponse(content=_content(types.Part(text=''.join(ANSWER_DELTAS))),
                              turn_complete=True)
            return

        user_text = ''
        for content in reversed(contents):
            texts = [p.text for p in (content.parts or []) if p.text and not p.thought]
            if content.role == 'user' and texts:
                user_text = ' '.join(texts)
                break
        if 'weather' not in user_text.lower():
            yield LlmResponse(content=_content(types.Part(text='Say weather.')), turn_complete=True)
            return
        if stream:
            for delta in THOUGHT_DELTAS:
                yield LlmResponse(content=_content(types.Part(text=delta, thought=True)), partial=True)
        yield LlmResponse(content=_content(
            types.Part(text=''.join(THOUGHT_DELTAS), thought=True),
            types.Part(function_call=types.FunctionCall(
                id=CALL_ID, name='get_weather', args={'city': 'Paris'})),
        ), turn_complete=True)


def build_agent() -> LlmAgent:
    return LlmAgent(name=APP_NAME, description='Scripted kagent agent.',
                    instruction='Answer weather questions with the get_weather tool.',
                    model=ScriptedLlm(), tools=[get_weather])


def agent_card(url: str, stream: bool) -> AgentCard:
    return AgentCard(
        name=APP_NAME, description='Scripted kagent agent.', url=url, version='0.1.0',
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text'], default_output_modes=['text'],
        skills=[AgentSkill(id='weather', name='weather', description='Weather in a city.',
                           tags=['weather'])],
    )


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0], lambda ap: ap.add_argument(
        '--stream', action='store_true', help='KAgentApp(stream=True): StreamingMode.SSE'))

    def build_app(host: str, port: int):
        app = KAgentApp(root_agent_factory=build_agent,
                        agent_card=agent_card(f'http://{host}:{port}/', args.stream),
                        kagent_url='http://127.0.0.1:9', app_name=APP_NAME, stream=args.stream)
        return app.build(local=True)

    _serve.serve(build_app, args.host, args.port)


if __name__ == '__main__':
    main()
