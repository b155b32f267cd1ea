"""AWS Strands agent served by `strands.multiagent.a2a.A2AServer`, driven by a scripted model.

Run with the venv from ../setup.sh: `.cache/venv-fw-strands/bin/python
tests/frameworks/strands/server.py --port 0 [--compliant]`. Prints `READY <port>`; SIGTERM stops
it (status 0). `--compliant` turns on `enable_a2a_compliant_streaming` (text deltas as appended
artifact chunks); the default is Strands' legacy streaming (one status message per delta).

Scenarios (a word of the user's text picks one):
* `text` (the default): the reply "Streaming text from Strands." in four deltas.
* `interrupt`: the model calls delete_file(path="/tmp/report.txt") (toolUseId tool-1); a
  BeforeToolCallEvent hook interrupts it (name "approval"), so the task ends input-required with
  the `{"interrupts":[...]}` data part. Resuming with an `interruptResponse` whose response is
  "yes" runs the tool, and the model answers "Deleted /tmp/report.txt." in two deltas.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, AsyncGenerator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from strands import Agent, tool  # noqa: E402
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.multiagent.a2a import A2AServer  # noqa: E402

TEXT_DELTAS = ['Streaming ', 'text ', 'from ', 'Strands.']
PATH = '/tmp/report.txt'


@tool
def delete_file(path: str) -> str:
    """Deletes a file (pretends to)."""
    return f'deleted {path}'


class ApprovalHook(HookProvider):
    """Asks the client before delete_file runs; anything but "yes" cancels the call."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool)

    def before_tool(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use['name'] != 'delete_file':
            return
        answer = event.interrupt('approval', reason={'tool': 'delete_file',
                                                     'path': event.tool_use['input'].get('path')})
        if answer != 'yes':
            event.cancel_tool = 'The user did not approve.'


def _text_events(deltas: list[str]) -> list[dict]:
    return ([{'messageStart': {'role': 'assistant'}}, {'contentBlockStart': {'start': {}}}]
            + [{'contentBlockDelta': {'delta': {'text': d}}} for d in deltas]
            + [{'contentBlockStop': {}}, {'messageStop': {'stopReason': 'end_turn'}}])


class ScriptedModel(Model):
    """A model whose next turn is fixed by the conversation so far."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {'model_id': 'scripted'}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError('the scripted model has no structured output')
        yield  # pragma: no cover  (makes this an async generator)

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs) -> AsyncGenerator[dict, None]:
        last = messages[-1] if messages else {'content': []}
        content = last.get('content', [])
        if any('toolResult' in block for block in content):
            for event in _text_events([f'Deleted {PATH}', '.']):
                yield event
            return
        text = ' '.join(block['text'] for block in content if 'text' in block).lower()
        if 'interrupt' in text:
            yield {'messageStart': {'role': 'assistant'}}
            yield {'contentBlockStart': {'start': {'toolUse': {'name': 'delete_file', 'toolUseId': 'tool-1'}}}}
            yield {'contentBlockDelta': {'delta': {'toolUse': {'input': json.dumps({'path': PATH})}}}}
            yield {'contentBlockStop': {}}
            yield {'messageStop': {'stopReason': 'tool_use'}}
            return
        for event in _text_events(TEXT_DELTAS):
            yield event


def build_agent(context_id: str) -> Agent:
    return Agent(name='scripted_strands_agent', description='Scripted Strands agent.',
                 model=ScriptedModel(), tools=[delete_file], hooks=[ApprovalHook()],
                 callback_handler=None)


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0], lambda ap: ap.add_argument(
        '--compliant', action='store_true', help='enable_a2a_compliant_streaming=True'))

    def build_app(host: str, port: int):
        server = A2AServer(agent_factory=build_agent, host=host, port=port,
                           enable_a2a_compliant_streaming=args.compliant)
        return server.to_starlette_app()

    _serve.serve(build_app, args.host, args.port)


if __name__ == '__main__':
    main()
