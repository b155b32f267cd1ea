"""Checks an agent card's signatures with a2a-sdk's own verifier (the gateway's card tests).

  python verify_card.py JWKS_FILE < card.json    -> prints "verified" or "invalid: <why>"

The card is read as a2a-sdk's client reads one (into its protobuf AgentCard, the 0.3 fields
it does not know ignored); a signature verifies with a key of JWKS_FILE named by its `kid`.
"""

from __future__ import annotations

import json
import sys

from google.protobuf.json_format import ParseDict
from jwt import PyJWK

from a2a.types import AgentCard
from a2a.utils.signing import SignatureVerificationError, create_signature_verifier


def main() -> int:
    keys = {key.get('kid'): PyJWK(key) for key in json.load(open(sys.argv[1]))['keys']}
    card = ParseDict(json.load(sys.stdin), AgentCard(), ignore_unknown_fields=True)

    def key_for(kid: str | None, _jku: str | None) -> PyJWK:
        return keys[kid]

    try:
        create_signature_verifier(key_for, ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'])(card)
    except (SignatureVerificationError, KeyError) as error:
        print(f'invalid: {type(error).__name__}')
        return 0
    print('verified')
    return 0


if __name__ == '__main__':
    sys.exit(main())
