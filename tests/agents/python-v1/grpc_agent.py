#!/usr/bin/env python3
"""The scenario agent of agent.py on a2a-sdk 1.3.0, serving only gRPC.

One grpc.aio server on one port with both services a2a-sdk 1.3.0 ships:
  lf.a2a.v1.A2AService   A2A 1.0 (GrpcHandler)
  a2a.v1.A2AService      A2A 0.3 (CompatGrpcHandler, the same request handler)
By default no HTTP at all: the card is what GetExtendedAgentCard (1.0) and GetAgentCard
(0.3) answer, naming the gRPC interfaces as `host:port` as the SDKs do.

Run: python grpc_agent.py [--host 127.0.0.1] [--port 0]   -> prints "READY <port>".
Scenarios: ../scenarios.json; DELAY_MS sets the pause between events.
TLS_CERT/TLS_KEY (PEM files) serve gRPC over TLS; with TLS_CLIENT_CA too, a client certificate
signed by that CA is required.
  CARD_HTTP_PORT=<port|0>  also serve the card over plain HTTP on that port (0: a free one) at
                           /.well-known/agent-card.json; prints "CARD <port>" on its own line
                           before "READY <grpc port>"
  GRPC_CARD=0.3            that HTTP card is 0.3 only: url `host:port`, preferredTransport GRPC,
                           protocolVersion 0.3, no supportedInterfaces (default: the SDK's card,
                           supportedInterfaces GRPC 1.0 and 0.3 plus its 0.3 fields)
  STREAMING=0              capabilities.streaming false: SendStreamingMessage is refused
  CALL_LOG=<path>          every gRPC call (its full method name) and HTTP request is logged
                           there, one JSON line each (../call_log.py)
SIGTERM or SIGINT stops it with exit status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
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

import call_log  # noqa: E402
import scenario_engine as engine  # noqa: E402
from agent import ScenarioExecutor, card_routes  # noqa: E402


def card_for(host: str, port: int) -> AgentCard:
    address = f'{host}:{port}'
    return AgentCard(
        name='agui-gateway test agent (a2a-sdk 1.3.0, gRPC only)',
        description='Plays the scripted scenarios of tests/agents/scenarios.json over A2A gRPC, 1.0 and 0.3.',
        version='1.0.0',
        capabilities=AgentCapabilities(
            streaming=engine.streaming(), push_notifications=False, extended_agent_card=True,
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


class CallLogInterceptor(grpc.aio.ServerInterceptor):
    """Logs each call's full method name (`/lf.a2a.v1.A2AService/GetTask`) as it arrives."""

    async def intercept_service(self, continuation, handler_call_details):
        call_log.record(handler_call_details.method)
        return await continuation(handler_call_details)


async def serve_card(card: AgentCard, host: str, port: int):
    """The card over plain HTTP (uvicorn on a socket bound first, so port 0 is known); its port."""
    import uvicorn
    from starlette.applications import Starlette

    app = call_log.wrap(Starlette(routes=card_routes(card, legacy_only=os.environ.get('GRPC_CARD') == '0.3')))
    sock = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, log_level=os.environ.get('LOG_LEVEL', 'warning').lower(),
                                           access_log=False, lifespan='off', timeout_graceful_shutdown=1))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(3000):  # bounded: uvicorn starts, or its task ends, well within 30 s
        if server.started or serving.done():
            break
        await asyncio.sleep(0.01)
    if not server.started:
        raise SystemExit('the card server did not start')
    return server, serving, sock.getsockname()[1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0)
    args = parser.parse_args()
    if os.environ.get('GRPC_CARD', '') not in ('', '0.3'):
        raise SystemExit(f"GRPC_CARD={os.environ['GRPC_CARD']!r}: expected 0.3 or nothing")
    # SIGTERM/SIGINT end the process with status 0. uvicorn (the card server) takes the
    # signals while it runs and re-raises them once it has stopped, which lands here too.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))
    interceptors = [CallLogInterceptor()] if call_log.enabled() else []
    server = grpc.aio.server(interceptors=interceptors)
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
    card_server = None
    waits = [asyncio.create_task(stop.wait())]
    if os.environ.get('CARD_HTTP_PORT'):
        card_server, serving, card_port = await serve_card(card, args.host, int(os.environ['CARD_HTTP_PORT']))
        waits.append(serving)
        print(f'CARD {card_port}', flush=True)
    print(f'READY {port}', flush=True)
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    if card_server is not None:
        card_server.should_exit = True
    await server.stop(0.5)
    for task in waits:
        task.cancel()


if __name__ == '__main__':
    asyncio.run(main())
