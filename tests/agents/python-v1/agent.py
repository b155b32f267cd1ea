#!/usr/bin/env python3
"""Scenario test agent on a2a-sdk 1.3.0 (A2A 1.0, with the 0.3 compat layer switched on).

  GET  /.well-known/agent-card.json   hybrid card (1.0 supportedInterfaces + 0.3 url/preferredTransport)
  POST /                              JSON-RPC 1.0 (A2A-Version: 1.0) and 0.3 (message/stream, ...)
  POST /rest/message:stream           HTTP+JSON 1.0           (and the other 1.0 REST routes)
  POST /rest/v1/message:stream        HTTP+JSON 0.3 compat    (and the other 0.3 REST routes)

Run: python agent.py [--host 127.0.0.1] [--port 0]   -> prints "READY <port>".
Scenarios: ../scenarios.json (see ../README.md). DELAY_MS sets the pause between events.
TLS_CERT/TLS_KEY/TLS_CLIENT_CA serve HTTPS (../../frameworks/_serve.py); REQUIRE_BEARER_JWKS and
CARD_TOKEN_URL require and declare OAuth2 bearer tokens (bearer.py); CARD_SIGNING_KEY, CARD_TAMPER
and EXTENDED_CARD sign the card and serve an extended one (signed_card.py).

Card and call switches (the polling and card-preference tests; unset, the card is as above):
  STREAMING=0           capabilities.streaming false: the SDK refuses every streaming call
  CARD_VERSIONS=0.3     the card is 0.3 only (url, preferredTransport, protocolVersion,
                        additionalInterfaces; no supportedInterfaces), made by the SDK's own
                        0.3 compat types; the agent still answers 1.0 calls
  CARD_ORDER=rest-first supportedInterfaces list HTTP+JSON (at /rest) before JSONRPC
  CARD_FOREIGN=<url>    the first interface is JSONRPC 1.0 at <url> (another origin)
  CALL_LOG=<path>       every request is logged there, one JSON line each (../call_log.py)
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from a2a.compat.v0_3.conversions import to_compat_agent_card  # noqa: E402

from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import (  # noqa: E402
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
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

import bearer  # noqa: E402
import call_log  # noqa: E402
import signed_card  # noqa: E402
import scenario_engine as engine  # noqa: E402

STATES = {
    'submitted': TaskState.TASK_STATE_SUBMITTED,
    'working': TaskState.TASK_STATE_WORKING,
    'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
    'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
    'completed': TaskState.TASK_STATE_COMPLETED,
    'failed': TaskState.TASK_STATE_FAILED,
    'rejected': TaskState.TASK_STATE_REJECTED,
    'canceled': TaskState.TASK_STATE_CANCELED,
}


def to_part(spec: dict) -> Part:
    """Neutral part (scenarios.json) -> 1.0 proto Part."""
    if 'text' in spec:
        part = Part(text=spec['text'])
    elif 'data' in spec:
        part = Part(data=ParseDict(spec['data'], struct_pb2.Value()))
    elif 'url' in spec:
        part = Part(url=spec['url'], media_type=spec.get('mediaType', ''), filename=spec.get('filename', ''))
    else:
        raise ValueError(f'unsupported part {spec!r}')
    if spec.get('metadata'):
        part.metadata.update(spec['metadata'])
    return part


class SdkEmitter:
    def __init__(self, queue: EventQueue, task_id: str, context_id: str, canceled: set[str],
                 existing_artifacts: set[str]) -> None:
        self.updater = TaskUpdater(queue, task_id, context_id)
        self.artifacts = set(existing_artifacts)
        self.queue = queue
        self.task_id = task_id
        self.context_id = context_id
        self._canceled = canceled

    def _message(self, spec: dict, with_task: bool = True) -> Message:
        msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT, context_id=self.context_id,
                      parts=[to_part(p) for p in spec.get('parts', [])])
        if with_task:
            msg.task_id = self.task_id
        if spec.get('metadata'):
            msg.metadata.update(spec['metadata'])
        return msg

    async def status(self, state: str, message: dict | None, metadata: dict | None) -> None:
        await self.updater.update_status(STATES[state],
                                         message=self._message(message) if message is not None else None,
                                         metadata=metadata)

    async def artifact(self, artifact: dict, append: bool | None, last_chunk: bool | None) -> None:
        if append and artifact['artifactId'] not in self.artifacts:
            # a2a-sdk 1.x rejects append=True for an artifact it has not seen (-32006
            # InvalidAgentResponse), so the 'commands' scenario's first chunk goes out as
            # append=False here; python-v03 and js-v1 send it as written (append=True).
            append = False
        self.artifacts.add(artifact['artifactId'])
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

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        user_text = context.get_user_input()
        user_metadata = MessageToDict(context.message.metadata) if context.message.metadata else {}
        task = context.current_task
        follow_up_of = None
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            follow_up_of = self.waiting.pop(task.id, None)
        plan = self.catalog.plan(user_text, user_metadata, follow_up_of)
        em = SdkEmitter(event_queue, context.task_id, context.context_id, self.canceled,
                        {a.artifact_id for a in task.artifacts} if task is not None else set())
        if not plan.message_only and task is None:
            # A task stream must open with the Task (the SDK enforces it).
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[context.message]))
        await engine.play(plan, em)
        last = plan.steps[-1] if plan.steps else {}
        if last.get('status') == 'input-required':
            self.waiting[context.task_id] = plan.name

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.canceled.add(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def interfaces(base: str) -> list[AgentInterface]:
    """The card's interfaces, in its order of preference (CARD_ORDER, CARD_FOREIGN, CARD_VERSIONS)."""
    jsonrpc = [AgentInterface(protocol_binding='JSONRPC', protocol_version=v, url=f'{base}/')
               for v in ('1.0', '0.3')]
    rest = [AgentInterface(protocol_binding='HTTP+JSON', protocol_version=v, url=f'{base}/rest')
            for v in ('1.0', '0.3')]
    order = os.environ.get('CARD_ORDER', '')
    if order not in ('', 'rest-first'):
        raise SystemExit(f'CARD_ORDER={order!r}: expected rest-first or nothing')
    listed = rest + jsonrpc if order == 'rest-first' else jsonrpc + rest
    foreign = os.environ.get('CARD_FOREIGN')
    if foreign:
        listed.insert(0, AgentInterface(protocol_binding='JSONRPC', protocol_version='1.0', url=foreign))
    versions = os.environ.get('CARD_VERSIONS', '')
    if versions not in ('', '0.3'):
        raise SystemExit(f'CARD_VERSIONS={versions!r}: expected 0.3 or nothing')
    if versions == '0.3':
        listed = [i for i in listed if i.protocol_version == '0.3']
    return listed


def card_routes(card: AgentCard, legacy_only: bool) -> list:
    """The card's route: the SDK's (the hybrid card), or with ``legacy_only`` the SDK's 0.3 card.

    a2a-sdk 1.3.0 always serves a card with supportedInterfaces; a 0.3-only card is its own
    0.3 compat type (to_compat_agent_card: the first 0.3 interface becomes url and
    preferredTransport, the others additionalInterfaces), served here as the SDK would serve it.
    """
    if not legacy_only:
        return create_agent_card_routes(card)
    legacy = to_compat_agent_card(card).model_dump(exclude_none=True)
    if not legacy.get('supportsAuthenticatedExtendedCard'):
        legacy.pop('supportsAuthenticatedExtendedCard', None)

    async def serve_card(_request) -> JSONResponse:
        return JSONResponse(legacy)

    return [Route('/.well-known/agent-card.json', serve_card, methods=['GET'])]


def build_app(host: str, port: int):
    # HTTPS when the runner serves TLS (TLS_CERT, see ../../frameworks/_serve.py).
    scheme = 'https' if os.environ.get('TLS_CERT') else 'http'
    base = f'{scheme}://{host}:{port}'
    card = AgentCard(
        name='agui-gateway test agent (a2a-sdk 1.3.0)',
        description='Plays the scripted scenarios of tests/agents/scenarios.json over A2A 1.0 and 0.3.',
        version='1.0.0',
        capabilities=AgentCapabilities(
            streaming=engine.streaming(), push_notifications=False,
            extensions=[AgentExtension(uri=uri, description=desc, required=False)
                        for uri, desc in engine.EXTENSION_URIS]),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain', 'application/json'],
        skills=[AgentSkill(id='scenarios', name='Scenarios',
                           description='Picks a scripted scenario by a magic word in the text.',
                           tags=['test'], examples=['chunks', 'input-required', 'slow:5'])],
        supported_interfaces=interfaces(base),
        **bearer.card_security())
    card, extended = signed_card.prepare(card)
    handler = DefaultRequestHandler(agent_executor=ScenarioExecutor(), task_store=InMemoryTaskStore(),
                                    agent_card=card, extended_agent_card=extended)
    routes = []
    routes += card_routes(card, legacy_only=os.environ.get('CARD_VERSIONS') == '0.3')
    routes += create_rest_routes(handler, path_prefix='/rest', enable_v0_3_compat=True)
    routes += create_jsonrpc_routes(handler, rpc_url='/', enable_v0_3_compat=True)
    return call_log.wrap(bearer.guard(Starlette(routes=routes)))


if __name__ == '__main__':
    args = engine.parse_args(__doc__.splitlines()[0])
    engine.serve(build_app, args.host, args.port)
