"""CrewAI agent served over A2A with CrewAI's own A2A server support, driven by a scripted LLM.

Run with the venv from ../setup.sh: `.cache/venv-fw-crewai/bin/python
tests/frameworks/crewai/server.py --port 0`. Prints `READY <port>`; SIGTERM stops it (status 0).

CrewAI (1.15) ships the server side of A2A as parts, not as an HTTP app:
`Agent(a2a=A2AServerConfig(...))` gives the agent `to_agent_card(url)`, and
`crewai.a2a.utils.task.execute` / `cancel` run one A2A request against the agent (a Task built
from the user's text; the result is enqueued as one completed `Task` with a `result_<taskId>`
artifact). This file wires exactly those into a2a-sdk's `DefaultRequestHandler` and
`A2AStarletteApplication` (JSON-RPC at `/`), which is what CrewAI expects its users to do.

Scenarios (a word of the user's text picks one):
* `answer` (the default): the LLM answers "Paris is sunny, 21 °C." in CrewAI's ReAct format, so
  the artifact holds one text part.
* `data`: the request's text part carries `metadata.schema` (a JSON schema, which is how CrewAI's
  own A2A client asks for structured output); CrewAI turns it into the task's `response_model`,
  the LLM returns an instance of that model, and the artifact holds one data part
  `{"city":"Paris","temp_c":21,"sky":"sunny"}`. This request runs on an Agent built without
  `a2a=`: on an agent that has `a2a=A2AServerConfig(...)`, CrewAI 1.15.30 wraps `aexecute_task`
  with its client-side delegation code, which sets `task.response_model` to its own (None, as
  there are no remote agents) and so drops the client's schema.
* `data-ignored`: the same schema sent to the `A2AServerConfig` agent, which shows that drop: the
  artifact holds the text answer.

Every request gets fresh Agent objects (CrewAI's executor refuses concurrent use of one agent).
The agent card comes from `to_agent_card` of the `A2AServerConfig` agent.

No network: telemetry and tracing are switched off through CrewAI's environment variables
before it is imported, and the LLM never leaves the process.
"""
from __future__ import annotations

import os
import signal
import sys
from typing import Any

# The imports below take seconds (crewai about 6 s); a stop request in that window still exits
# with status 0. _serve.serve installs its own handlers later.
for _sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(_sig, lambda *_: sys.exit(0))

# Before crewai is imported: no telemetry exporter, no trace upload, no first-run prompt.
for _key, _value in {
    'OTEL_SDK_DISABLED': 'true',
    'CREWAI_DISABLE_TELEMETRY': 'true',
    'CREWAI_DISABLE_TRACKING': 'true',
    'CREWAI_TRACING_ENABLED': 'false',
    'CREWAI_DISABLE_VERSION_CHECK': 'true',
    'CREWAI_TESTING': 'true',
}.items():
    os.environ.setdefault(_key, _value)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _serve  # noqa: E402

from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.apps import A2AStarletteApplication  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from crewai import Agent  # noqa: E402
from crewai.a2a import A2AServerConfig  # noqa: E402
from crewai.a2a.utils import task as crewai_a2a_task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402

ANSWER = 'Paris is sunny, 21 °C.'
WEATHER = {'city': 'Paris', 'temp_c': 21, 'sky': 'sunny'}


class ScriptedLLM(BaseLLM):
    """A CrewAI LLM whose reply is fixed: the structured weather when a response model is
    asked for, otherwise the ReAct-style final answer that CrewAI's parser expects."""

    def call(self, messages, tools=None, callbacks=None, available_functions=None,
             from_task=None, from_agent=None, response_model=None) -> Any:
        if response_model is not None:
            return response_model.model_validate(WEATHER)
        return f'Thought: I know the weather already.\nFinal Answer: {ANSWER}'

    def supports_function_calling(self) -> bool:
        return False

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192


def build_agent(server_config: bool = True) -> Agent:
    """The agent; with `server_config`, exposed the documented way (`a2a=A2AServerConfig`)."""
    extra: dict[str, Any] = {}
    if server_config:
        extra['a2a'] = A2AServerConfig(name='scripted_crewai_agent',
                                       description='Scripted CrewAI agent.')
    return Agent(role='Weather reporter', goal='Tell the user the weather in Paris.',
                 backstory='A scripted CrewAI agent for the agui-gateway tests.',
                 llm=ScriptedLLM(model='scripted'), verbose=False, max_iter=2, **extra)


class CrewAIA2AExecutor(AgentExecutor):
    """Hands every A2A request to CrewAI's own server-side task execution."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().lower()
        plain = 'data' in text and 'ignored' not in text
        await crewai_a2a_task.execute(build_agent(server_config=not plain), context, event_queue)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await crewai_a2a_task.cancel(context, event_queue)


def main() -> None:
    args = _serve.parse_args(__doc__.splitlines()[0])

    def build_app(host: str, port: int):
        card = build_agent().to_agent_card(f'http://{host}:{port}/')
        handler = DefaultRequestHandler(agent_executor=CrewAIA2AExecutor(),
                                        task_store=InMemoryTaskStore())
        return A2AStarletteApplication(agent_card=card, http_handler=handler).build()

    _serve.serve(build_app, args.host, args.port)


if __name__ == '__main__':
    main()
