#!/usr/bin/env python3
"""A2A gRPC client differential: a2a_client_diff.py's scripted calls, made with a2a-sdk 1.3.0's gRPC
client, against a gRPC-only agent directly and through the gateway's gRPC passthrough. The two
normalised result sets must be equal.

    .cache/venv-a2a-v1/bin/python tests/conformance/a2a_grpc_diff.py \
        --direct 127.0.0.1:AGENT --gateway http://127.0.0.1:GATEWAY/

(`a2a_client_diff.sh --grpc` starts python-v1's grpc_agent.py and the gateway and runs this.)

Per service (1.0's `lf.a2a.v1.A2AService`, 0.3's `a2a.v1.A2AService` through the SDK's compat
transport): the extended card, then every check of a2a_client_diff.py (send, stream,
input-required, fail, get, cancel a running task, resubscribe, and the three error cases). Each
side's client is built from the card it read over gRPC from that side, so through the gateway every
call goes where the gateway's card says: its own gRPC address.

The cards: each side's gRPC interfaces must name the address it was read from. The gateway's card
also names its JSON-RPC endpoint (asserted, then dropped); everything else must be equal. The
gateway's HTTP card must name its gRPC address too, for both services.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a.client import ClientConfig, ClientFactory  # noqa: E402
from a2a.types.a2a_pb2 import AgentCard, AgentInterface, GetExtendedAgentCardRequest  # noqa: E402

from a2a_client_diff import (  # noqa: E402
    CARD_PATH,
    CheckError,
    Side,
    compare,
    pb,
    run_sides,
)

SERVICES = [('grpc-1.0', '1.0'), ('grpc-0.3', '0.3')]


class GrpcSide(Side):
    """Every scripted call against one gRPC address (the agent's, or the gateway's)."""

    def __init__(self, name: str, address: str, http_base: str | None) -> None:
        super().__init__(name, f'http://{address}/')
        self.address = address
        self.http_base = http_base
        self.normal_base = address
        self.cards: dict[str, AgentCard] = {}

    def client(self, binding: str, version: str, streaming: bool = True):
        card = self.cards.get(version) or self.card
        if card is None:
            raise CheckError('no card to build a client from')
        keep = [i for i in card.supported_interfaces
                if i.protocol_binding == binding and i.protocol_version == version]
        if not keep:
            raise CheckError(f'card has no {binding} {version} interface')
        narrowed = AgentCard()
        narrowed.CopyFrom(card)
        del narrowed.supported_interfaces[:]
        narrowed.supported_interfaces.extend(keep)
        # a2a-sdk 1.3.0's 1.0 GetExtendedAgentCard answers with empty
        # capabilities (its 0.3 GetAgentCard does not): the client would then
        # refuse to stream. The agent streams; both sides are told so alike.
        narrowed.capabilities.streaming = True
        config = ClientConfig(streaming=streaming, supported_protocol_bindings=['GRPC'],
                              grpc_channel_factory=grpc.aio.insecure_channel)
        return ClientFactory(config).create(narrowed)

    def _check_grpc_card(self, card: dict) -> dict:
        """Every gRPC interface names this side's address; the gateway's JSON-RPC one is dropped."""
        kept = []
        grpc_seen = 0
        for i, iface in enumerate(card.get('supportedInterfaces') or []):
            if iface.get('protocolBinding') == 'GRPC':
                if iface.get('url') != self.address:
                    raise CheckError(f'{self.name} card supportedInterfaces[{i}] = {iface} '
                                     f'does not name {self.address}')
                grpc_seen += 1
                kept.append(iface)
            elif self.name == 'gateway' and iface.get('protocolBinding') == 'JSONRPC':
                want = urlsplit(self.http_base or '')
                got = urlsplit(iface.get('url') or '')
                if (got.scheme, got.netloc) != (want.scheme, want.netloc):
                    raise CheckError(f'gateway card JSON-RPC interface {iface} is not the gateway')
            else:
                raise CheckError(f'{self.name} card names another interface: {iface}')
        if not grpc_seen:
            raise CheckError(f'{self.name} card names no gRPC interface')
        card = json.loads(json.dumps(card))
        card['supportedInterfaces'] = kept
        card.pop('signatures', None)
        return card

    async def check_grpc_card(self, version: str) -> Any:
        bootstrap = AgentCard(supported_interfaces=[
            AgentInterface(protocol_binding='GRPC', protocol_version=version, url=self.address)])
        config = ClientConfig(streaming=False, supported_protocol_bindings=['GRPC'],
                              grpc_channel_factory=grpc.aio.insecure_channel)
        client = ClientFactory(config).create(bootstrap)
        try:
            card = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        finally:
            await client.close()
        self.cards[version] = card
        if version == '1.0':
            self.card = card
        return self._check_grpc_card(pb(card))

    async def check_http_card(self) -> Any:
        """The gateway's HTTP card names its gRPC address for both services."""
        async with httpx.AsyncClient(timeout=10) as http:
            raw = (await http.get(self.http_base.rstrip('/') + CARD_PATH)).json()
        grpc_ifaces = sorted((i.get('protocolVersion'), i.get('url'))
                             for i in raw.get('supportedInterfaces') or []
                             if i.get('protocolBinding') == 'GRPC')
        if grpc_ifaces != [('0.3', self.address), ('1.0', self.address)]:
            raise CheckError(f'the gateway HTTP card names gRPC as {grpc_ifaces}')
        return 'names the gateway'

    async def run_all(self) -> dict[str, Any]:
        results: dict[str, Any] = {}
        card = self.card_check
        for label, version in SERVICES:
            results[f'{label} card: GetExtendedAgentCard'] = await card(self.check_grpc_card, version)
        if self.name == 'gateway':
            results['gateway HTTP card names its gRPC address'] = await card(self.check_http_card)
        if self.card is None:
            return results
        for label, version in SERVICES:
            try:
                results.update(await self.run_transport(label, 'GRPC', version))
            except CheckError as e:
                results[f'{label} client'] = {'side-check-failed': str(e)}
        return results


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--direct', required=True, help="the agent's gRPC address, host:port")
    ap.add_argument('--gateway', required=True, help="the gateway's base URL (fronting that agent)")
    ap.add_argument('--verbose', action='store_true', help='print every normalised result')
    args = ap.parse_args()
    gateway = urlsplit(args.gateway)
    direct, through = await run_sides([GrpcSide('direct', args.direct, None),
                                       GrpcSide('gateway', gateway.netloc, args.gateway)])
    # Checks only one side makes are compared with themselves.
    for name in through:
        if name not in direct and name.startswith('gateway '):
            direct[name] = through[name]
    return compare(direct, through, args.verbose)


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
