#!/usr/bin/env python3
"""The scenario agent of agent.py on a2a-sdk 1.3.0, serving only gRPC.

One grpc.aio server on one port with both services a2a-sdk 1.3.0 ships:
  lf.a2a.v1.A2AService   A2A 1.0 (GrpcHandler)
  a2a.v1.A2AService      A2A 0.3 (CompatGrpcHandler, the same request handler)
No HTTP at all: the card is what GetExtendedAgentCard (1.0) and GetAgentCard
(0.3) answer, naming the gRPC interfaces as `host:port` as the SDKs do.

Run: python grpc_agent.py [--host 127.0.0.1] [--port 0]   -> prints "READY <port>".
Scenarios: ../scenarios.json; DELAY_MS sets the pause between events.
TLS_CERT/TLS_KEY (PEM files) serve gRPC over TLS; with TLS_CLIENT_CA too, a client certificate
signed by that CA is required.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc  # noqa: E402

from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc  # noqa: E402
from a2a.compat.v0_3.grpc_handler import CompatGrpcHandler  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import (  # noqa: E402
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    a2a_pb2_grpc,
)

import scenario_engine as engine  # noqa: E402
from agent import ScenarioExecutor  # noqa: E402


def card_for(host: str, port: int) -> AgentCard:
    address = f'{host}:{port}'
    return AgentCard(
        name='agui-gateway test agent (a2a-sdk 1.3.0, gRPC only)',
        description='Plays the scripted scenarios of tests/agents/scenarios.json over A2A gRPC, 1.0 and 0.3.',
        version='1.0.0',
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=False, extended_agent_card=True,
            extensions=[AgentExtension(uri=uri, description=desc, required=False)
                        for uri, desc in engine.EXTENSION_URIS]),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain', 'application/json'],
        skills=[AgentSkill(id='scenarios', name='Scenarios',
                           description='Picks a scripted scenario by a magic word in the text.',
                           tags=['test'], examples=['chunks', 'input-required', 'slow:5'])],
        supported_interfaces=[
            AgentInterface(protocol_binding='GRPC', protocol_version='1.0', url=address),
            AgentInterface(protocol_binding='GRPC', protocol_version='0.3', url=address),
        ])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0)
    args = parser.parse_args()
    server = grpc.aio.server()
    address = f'{args.host}:{args.port}'
    if os.environ.get('TLS_CERT'):
        def read(name: str) -> bytes:
            return Path(os.environ[name]).read_bytes()
        client_ca = read('TLS_CLIENT_CA') if os.environ.get('TLS_CLIENT_CA') else None
        credentials = grpc.ssl_server_credentials(
            [(read('TLS_KEY'), read('TLS_CERT'))], root_certificates=client_ca,
            require_client_auth=client_ca is not None)
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    card = card_for(args.host, port)
    handler = DefaultRequestHandler(agent_executor=ScenarioExecutor(), task_store=InMemoryTaskStore(),
                                    agent_card=card, extended_agent_card=card)
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    a2a_v0_3_pb2_grpc.add_A2AServiceServicer_to_server(CompatGrpcHandler(handler), server)
    await server.start()
    print(f'READY {port}', flush=True)
    await server.wait_for_termination()


if __name__ == '__main__':
    asyncio.run(main())
