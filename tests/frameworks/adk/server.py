"""Google ADK (`to_a2a`) A2A server driven by a scripted model: no LLM, no network.

Run with the venv from ../setup.sh: `.cache/venv-fw-adk/bin/python tests/frameworks/adk/server.py
--port 0`. Prints `READY <port>`; SIGTERM stops it with status 0.

The user's text picks a scenario (the first word that names one; default `hello`), and the
function responses already in the conversation pick the next model turn:

* `tools`: thought + get_weather(call-1) -> tool result -> executable_code + code result + text.
* `long-running`: ask_approval(call-approve) is a LongRunningFunctionTool, so the task ends
  input-required; a follow-up carrying its function_response finishes with "Approved, done.".
* `state`: remember_city(call-state) sets session state `city` (adk_actions.stateDelta) -> text.
* `hello`: one text reply.

ADK serves its legacy executor by default and its new executor when the request carries the
extension `https://google.github.io/adk-docs/a2a/a2a-extension/`; nothing here chooses.
"""
from __future__ import annotations

import os
import re
import sys
from typing import AsyncGenerator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.a2a.utils.agent_to_a2a import to_a2a  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.tools import LongRunningFunctionTool  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402

SCENARIOS = ('tools', 'long-running', 'state', 'hello')


def get_weather(city: str) -> dict:
    """Returns the current weather of a city."""
    return {'temp_c': 21, 'sky': 'sunny'}


def ask_approval(amount: int) -> None:
    """Asks a human to approve spending `amount`; the answer arrives later."""
    return None  # long-running: the function response comes from the client


def remember_city(city: str, tool_context: ToolContext) -> dict:
    """Remembers the user's city in the session state."""
    tool_context.state['city'] = city
    return {'saved': True}


def _pick_scenario(text: str) -> str:
    for token in text.split():
        word = re.sub(r'^[^\w-]+|[^\w-]+$', '', token.lower())
        if word in SCENARIOS:
            return word
    return 'hello'


def _response(*parts: types.Part) -> LlmResponse:
    return LlmResponse(content=types.Content(role='model', parts=list(parts)))


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
            yield _response(
                types.Part(executable_code=types.ExecutableCode(
                    code='print(21 * 9 / 5 + 32)', language=types.Language.PYTHON)),
                types.Part(code_execution_result=types.CodeExecutionResult(
                    outcome=types.Outcome.OUTCOME_OK, output='69.8\n')),
                types.Part(text='It is 21 °C (69.8 °F) and sunny in Paris.'),
            )
            return
        if 'ask_approval' in answered:
            yield _response(types.Part(text='Approved, done.'))
            return
        if 'remember_city' in answered:
            yield _response(types.Part(text='I will remember that you live in Paris.'))
            return

        user_text = ''
        for content in reversed(contents):
            texts = [p.text for p in (content.parts or []) if p.text and not p.thought]
            if content.role == 'user' and texts:
                user_text = ' '.join(texts)
                break
        scenario = _pick_scenario(user_text)
        if scenario == 'tools':
            yield _response(
                types.Part(text='I should look up the weather.', thought=True),
                types.Part(function_call=types.FunctionCall(
                    id='call-1', name='get_weather', args={'city': 'Paris'})),
            )
        elif scenario == 'long-running':
            yield _response(types.Part(function_call=types.FunctionCall(
                id='call-approve', name='ask_approval', args={'amount': 5})))
        elif scenario == 'state':
            yield _response(types.Part(function_call=types.FunctionCall(
                id='call-state', name='remember_city', args={'city': 'Paris'})))
        else:
            yield _response(types.Part(text='Hello from the scripted ADK agent.'))


def build_agent() -> LlmAgent:
    return LlmAgent(
        name='scripted_adk_agent',
        description='Scripted ADK agent for the agui-gateway tests.',
        instruction='Follow the script.',
        model=ScriptedLlm(),
        tools=[get_weather, LongRunningFunctionTool(ask_approval), remember_city],
    )


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0])
    _serve.serve(lambda host, port: to_a2a(build_agent(), host=host, port=port), args.host, args.port)


if __name__ == '__main__':
    main()
