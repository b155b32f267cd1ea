"""Signed agent cards for the gateway's card-signature tests, made by a2a-sdk's own signer.

Environment:
  CARD_SIGNING_KEY  a PEM private key (EC P-256): the card, and the extended card, are signed
                    with a2a.utils.signing (ES256, `kid` CARD_SIGNING_KID, default "agent-key")
  CARD_TAMPER       the card's description is changed after it was signed: its signature no
                    longer verifies
  EXTENDED_CARD     the agent serves an extended card (`GetExtendedAgentCard`, REST
                    `GET /rest/extendedAgentCard`): described "Extended: ...", its first
                    interface under the tenant "acme"
"""

from __future__ import annotations

import os
from pathlib import Path

from a2a.types import AgentCard


def _signer():
    path = os.environ.get('CARD_SIGNING_KEY')
    if not path:
        return None
    from a2a.utils.signing import create_agent_card_signer
    key = Path(path).read_bytes()
    kid = os.environ.get('CARD_SIGNING_KID', 'agent-key')
    return create_agent_card_signer(key, {'kid': kid, 'alg': 'ES256', 'jku': None, 'typ': 'JOSE'})


def prepare(card: AgentCard) -> tuple[AgentCard, AgentCard | None]:
    """The card to serve and the extended one (None without EXTENDED_CARD), signed as set."""
    extended = None
    if os.environ.get('EXTENDED_CARD'):
        card.capabilities.extended_agent_card = True
        extended = AgentCard()
        extended.CopyFrom(card)
        extended.description = f'Extended: {card.description}'
        extended.supported_interfaces[0].tenant = 'acme'
    sign = _signer()
    if sign is not None:
        card = sign(card)
        if extended is not None:
            extended = sign(extended)
    if os.environ.get('CARD_TAMPER'):
        card.description = 'A cheaper agent, trust me.'
    return card, extended
