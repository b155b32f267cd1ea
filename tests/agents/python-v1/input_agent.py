#!/usr/bin/env python3
"""An a2a-sdk 1.3.0 agent that uses what AG-UI clients send through agui-gateway's
AG-UI input extension (docs/extension.md): the client's tools, tool results, resume
answers, state and context. The gateway's tests drive it with real AG-UI clients.

  clienttool   calls the client's `get_weather` tool (a Hector v2 `tool_use` part) and
               waits (input-required); the tool result (a `tool_result` data part)
               completes the task with "get_weather said: <content>".
  ask          asks "Which city?" (input-required); the answer (text, or the resume
               payload's `city`) completes the task with "Weather for <city>: sunny."
  state        reads x-agui-state and x-agui-context and answers a snapshot (the state,
               seen: true, contextCount) and a delta (add /answer: "sunny").
  count N MS   streams "1 ", "2 ", … "N " as chunks of one artifact, MS ms apart (default
               20 chunks, 100 ms), and stops early when the task is cancelled.
  whole N MS   streams as `count` does, then closes the artifact with one chunk holding
               the whole text (append=False, as ADK and Strands do): the stored task
               then keeps the answer as one part, not one part per chunk.

GET /received lists every message the agent received (task id, parts, metadata, the
request metadata, the extensions the client asked for) and every cancel, so a test can
see exactly what crossed the gateway.

Run: python input_agent.py [--host 127.0.0.1] [--port 0]   -> prints "READY <port>".
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import (  # noqa: E402
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)

import scenario_engine as engine  # noqa: E402

EXTENSION = 'urn:agui-gateway:a2a-extension:agui-input:v1'
RECEIVED: list[dict] = []


def data_part(value: dict) -> Part:
    return Part(data=ParseDict(value, struct_pb2.Value()))


class InputExecutor(AgentExecutor):
    def __init__(self) -> None:
        self.waiting: dict[str, str] = {}  # task id -> what it waits for
        self.cancelled: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        parts = [MessageToDict(p) for p in message.parts]
        metadata = MessageToDict(message.metadata) if message.metadata else {}
        RECEIVED.append({
            'taskId': message.task_id or None,
            'contextId': message.context_id,
            'parts': parts,
            'metadata': metadata,
            'requestMetadata': context.metadata,
            'extensions': sorted(context.requested_extensions),
        })
        task = context.current_task
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if task is None:
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[message]))
        waits_for = self.waiting.pop(context.task_id, None) if task is not None else None
        text = context.get_user_input().strip()
        results = [p['data'] for p in parts if isinstance(p.get('data'), dict) and p['data'].get('type') == 'tool_result']

        def agent_message(*message_parts: Part) -> Message:
            return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT, context_id=context.context_id,
                           task_id=context.task_id, parts=list(message_parts))

        if waits_for == 'tool' and results:
            said = '; '.join(f"{r.get('tool_name', 'tool')} said: {r.get('content', '')}" for r in results)
            await updater.add_artifact([Part(text=said)], artifact_id='answer', name='answer', last_chunk=True)
            await updater.complete()
        elif waits_for == 'city':
            answers = [p['data'] for p in parts if isinstance(p.get('data'), dict)]
            city = next((a.get('city') for a in answers if a.get('city')), None) or text or 'nowhere'
            await updater.add_artifact([Part(text=f'Weather for {city}: sunny.')], artifact_id='answer',
                                       name='answer', last_chunk=True)
            await updater.complete()
        elif 'clienttool' in text:
            tools = [t.get('name') for t in metadata.get('x-agui-tools', [])]
            if 'get_weather' not in tools:
                await updater.failed(agent_message(Part(text='the client declared no get_weather tool')))
                return
            await updater.update_status(TaskState.TASK_STATE_WORKING, message=agent_message(
                Part(text='Let me check the weather.'),
                data_part({'type': 'tool_use', 'id': 'call-weather', 'name': 'get_weather',
                           'arguments': {'city': 'Paris'}})))
            self.waiting[context.task_id] = 'tool'
            await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED)
        elif 'ask' in text:
            self.waiting[context.task_id] = 'city'
            await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED,
                                        message=agent_message(Part(text='Which city?')))
        elif text.startswith('count') or text.startswith('whole'):
            words = text.split()
            count = int(words[1]) if len(words) > 1 else 20
            pause = int(words[2]) if len(words) > 2 else 100
            whole = text.startswith('whole')
            for i in range(1, count + 1):
                if context.task_id in self.cancelled:
                    return
                await updater.add_artifact([Part(text=f'{i} ')], artifact_id='count', name='count',
                                           append=i > 1, last_chunk=i == count and not whole)
                await asyncio.sleep(pause / 1000)
            if whole:
                answer = ''.join(f'{i} ' for i in range(1, count + 1))
                await updater.add_artifact([Part(text=answer)], artifact_id='count', name='count',
                                           append=False, last_chunk=True)
            await updater.complete()
        elif 'state' in text:
            state = metadata.get('x-agui-state') or context.metadata.get('x-agui-state') or {}
            snapshot = {**state, 'seen': True, 'contextCount': len(metadata.get('x-agui-context', []))}
            await updater.add_artifact([
                data_part({'type': 'agui-state-snapshot', 'snapshot': snapshot}),
                data_part({'type': 'agui-state-delta', 'patch': [{'op': 'add', 'path': '/answer', 'value': 'sunny'}]}),
                Part(text='State updated.'),
            ], artifact_id='state', name='state', last_chunk=True)
            await updater.complete()
        else:
            await updater.add_artifact([Part(text=f'You said: {text}')], artifact_id='answer', name='answer',
                                       last_chunk=True)
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        RECEIVED.append({'cancel': context.task_id})
        self.cancelled.add(context.task_id)
        self.waiting.pop(context.task_id, None)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


async def received(_request) -> JSONResponse:
    return JSONResponse(RECEIVED)


def build_app(host: str, port: int) -> Starlette:
    base = f'http://{host}:{port}'
    card = AgentCard(
        name='agui-gateway input test agent (a2a-sdk 1.3.0)',
        description='Uses the tools, tool results, resume answers, state and context AG-UI clients send.',
        version='1.0.0',
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=False,
            extensions=[AgentExtension(uri=EXTENSION, description='AG-UI input', required=False)]),
        default_input_modes=['text/plain', 'application/json'],
        default_output_modes=['text/plain', 'application/json'],
        skills=[AgentSkill(id='input', name='AG-UI input', description='clienttool, ask, state',
                           tags=['test'], examples=['clienttool', 'ask', 'state'])],
        supported_interfaces=[
            AgentInterface(protocol_binding='JSONRPC', protocol_version='1.0', url=f'{base}/'),
            AgentInterface(protocol_binding='JSONRPC', protocol_version='0.3', url=f'{base}/'),
        ])
    handler = DefaultRequestHandler(agent_executor=InputExecutor(), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    routes = [Route('/received', received)]
    routes += create_agent_card_routes(card)
    routes += create_jsonrpc_routes(handler, rpc_url='/', enable_v0_3_compat=True)
    return Starlette(routes=routes)


if __name__ == '__main__':
    args = engine.parse_args(__doc__.splitlines()[0])
    engine.serve(build_app, args.host, args.port)
