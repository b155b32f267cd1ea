#!/usr/bin/env python3
"""Scenario test agent on a2a-sdk 0.3.26 (native A2A 0.3, no 1.0 support).

  GET  /.well-known/agent-card.json   0.3 card (also served at the deprecated /.well-known/agent.json)
  POST /                              JSON-RPC 0.3 (message/stream, tasks/get, tasks/cancel, ...)
  POST /rest/v1/message:stream        HTTP+JSON 0.3 -- the SDK pretty-prints each event over many
                                      `data:` lines (CRLF); that framing is kept on purpose.

Run: python agent.py [--host 127.0.0.1] [--port 0]   -> prints "READY <port>".
Scenarios: ../scenarios.json (see ../README.md). DELAY_MS sets the pause between events.
Interrupted states (input-required, auth-required) are sent with final=true, as most 0.3 agents
do (the 1.x compat layer sends final=false). A follow-up turn's stream opens with a status-update.
STREAMING=0 makes the card say capabilities.streaming false (the SDK then refuses message/stream);
CALL_LOG=<path> logs every request there, one JSON line each (../call_log.py).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import (  # noqa: E402
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    DataPart,
    FilePart,
    FileWithUri,
    Message,
    Part,
    Role,
    TaskState,
    TextPart,
)
from a2a.utils import new_task  # noqa: E402

import call_log  # noqa: E402
import scenario_engine as engine  # noqa: E402


def to_part(spec: dict) -> Part:
    """Neutral part (scenarios.json) -> 0.3 pydantic Part."""
    metadata = spec.get('metadata') or None
    if 'text' in spec:
        return Part(root=TextPart(text=spec['text'], metadata=metadata))
    if 'data' in spec:
        return Part(root=DataPart(data=spec['data'], metadata=metadata))
    if 'url' in spec:
        return Part(root=FilePart(
            file=FileWithUri(uri=spec['url'], mime_type=spec.get('mediaType'), name=spec.get('filename')),
            metadata=metadata))
    raise ValueError(f'unsupported part {spec!r}')


class SdkEmitter:
    def __init__(self, queue: EventQueue, task_id: str, context_id: str, canceled: set[str]) -> None:
        self.updater = TaskUpdater(queue, task_id, context_id)
        self.queue = queue
        self.task_id = task_id
        self.context_id = context_id
        self._canceled = canceled

    def _message(self, spec: dict, with_task: bool = True) -> Message:
        return Message(message_id=str(uuid.uuid4()), role=Role.agent, context_id=self.context_id,
                       task_id=self.task_id if with_task else None,
                       parts=[to_part(p) for p in spec.get('parts', [])],
                       metadata=spec.get('metadata') or None)

    async def status(self, state: str, message: dict | None, metadata: dict | None) -> None:
        await self.updater.update_status(TaskState(state),
                                         message=self._message(message) if message is not None else None,
                                         final=state in engine.FINAL_STATES,
                                         metadata=metadata)

    async def artifact(self, artifact: dict, append: bool | None, last_chunk: bool | None) -> None:
        await self.updater.add_artifact(parts=[to_part(p) for p in artifact['parts']],
                                        artifact_id=artifact['artifactId'], name=artifact.get('name'),
                                        metadata=artifact.get('metadata'), append=append,
                                        last_chunk=last_chunk)

    async def message(self, message: dict) -> None:
        await self.queue.enqueue_event(self._message(message, with_task=False))

    def canceled(self) -> bool:
        return self.task_id in self._canceled


class ScenarioExecutor(AgentExecutor):
    def __init__(self) -> None:
        self.catalog = engine.Catalog()
        self.waiting: dict[str, str] = {}  # task id -> scenario waiting for a follow-up turn
        self.canceled: set[str] = set()
        self.queues: dict[str, EventQueue] = {}  # task id -> the queue its live stream reads

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        user_text = context.get_user_input()
        user_metadata = dict(context.message.metadata or {}) if context.message else {}
        task = context.current_task
        follow_up_of = None
        if task is not None and task.status.state == TaskState.input_required:
            follow_up_of = self.waiting.pop(task.id, None)
        plan = self.catalog.plan(user_text, user_metadata, follow_up_of)
        if plan.message_only:
            em = SdkEmitter(event_queue, context.task_id or '', context.context_id or '', self.canceled)
        else:
            if task is None:
                # A new task's stream opens with the Task. A follow-up turn's does not: 0.3.26
                # treats a Task event in state input-required as final and would end the stream
                # right after re-sending the snapshot, so a follow-up opens with a status-update.
                task = new_task(context.message)
                await event_queue.enqueue_event(task)
            em = SdkEmitter(event_queue, task.id, task.context_id, self.canceled)
            self.queues[task.id] = event_queue
        try:
            await engine.play(plan, em)
        finally:
            self.queues.pop(em.task_id, None)
        last = plan.steps[-1] if plan.steps else {}
        if last.get('status') == 'input-required':
            self.waiting[em.task_id] = plan.name

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # 0.3.26 hands cancel() a *tap* of the task's queue: what is enqueued there reaches the
        # tasks/cancel caller but not the open message/stream, which would then just close with
        # no terminal event. Enqueueing on the parent queue reaches both (taps get copies).
        self.canceled.add(context.task_id)
        queue = self.queues.get(context.task_id, event_queue)
        await TaskUpdater(queue, context.task_id, context.context_id).cancel()


def build_app(host: str, port: int):
    base = f'http://{host}:{port}'
    card = AgentCard(
        name='agui-gateway test agent (a2a-sdk 0.3.26)',
        description='Plays the scripted scenarios of tests/agents/scenarios.json over native A2A 0.3.',
        version='1.0.0',
        url=f'{base}/',
        preferred_transport='JSONRPC',
        additional_interfaces=[AgentInterface(transport='JSONRPC', url=f'{base}/'),
                               AgentInterface(transport='HTTP+JSON', url=f'{base}/rest')],
        capabilities=AgentCapabilities(
            streaming=engine.streaming(), push_notifications=False,
            extensions=[AgentExtension(uri=uri, description=desc, required=False)
                        for uri, desc in engine.EXTENSION_URIS]),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain', 'application/json'],
        skills=[AgentSkill(id='scenarios', name='Scenarios',
                           description='Picks a scripted scenario by a magic word in the text.',
                           tags=['test'], examples=['chunks', 'input-required', 'slow:5'])])
    handler = DefaultRequestHandler(agent_executor=ScenarioExecutor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    app.mount('/rest', A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build())
    return call_log.wrap(app)


if __name__ == '__main__':
    args = engine.parse_args(__doc__.splitlines()[0])
    engine.serve(build_app, args.host, args.port)
