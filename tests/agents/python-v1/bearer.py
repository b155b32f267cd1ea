"""Bearer tokens for the test agents (the gateway's upstream identity tests).

Environment:
  REQUIRE_BEARER_JWKS      a JWKS URL: every request but the card's (/.well-known/…) and
                           /test/bearer needs `Authorization: Bearer <JWT>` signed by one
                           of its keys and not expired, else 401 with
                           `WWW-Authenticate: Bearer realm="agent"` (plus
                           `error="invalid_token"` when a token came but was refused)
  REQUIRE_BEARER_AUDIENCE  the `aud` the token must have (unset: any)
  REQUIRE_BEARER_ISSUER    the `iss` it must have (optional)
  CARD_TOKEN_URL           the card declares an OAuth2 client-credentials flow with this
                           `tokenUrl` (scope `a2a.invoke`) and requires it, in both card
                           shapes: 1.0 `securitySchemes.oauth.oauth2SecurityScheme.flows.
                           clientCredentials.tokenUrl` with `securityRequirements`, and (the
                           SDK's 0.3 compat fields) `securitySchemes.oauth.flows.
                           clientCredentials.tokenUrl`, `type: "oauth2"`, `security`
  REJECT_FIRST_TOKENS      the first N distinct valid tokens (by `jti`) are refused (401),
                           each every time it comes back, as an agent that revoked them
                           would: the gateway gets through only with a newly fetched token

GET /test/bearer lists, in order, what each request's token said: {sub, aud, client_id, jti}
when accepted (plus `act` when the token has one, as exchanged tokens with an actor do), and
{refused: reason} (with `jti` when REJECT_FIRST_TOKENS refused a valid one) otherwise, so a
test sees who called the agent with what.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

TESTED: list[dict[str, Any]] = []


def card_security() -> dict[str, Any]:
    """AgentCard keyword arguments declaring the OAuth2 flow, when CARD_TOKEN_URL is set."""
    token_url = os.environ.get('CARD_TOKEN_URL')
    if not token_url:
        return {}
    from a2a.types import (ClientCredentialsOAuthFlow, OAuth2SecurityScheme, OAuthFlows,
                           SecurityRequirement, SecurityScheme)
    flow = ClientCredentialsOAuthFlow(token_url=token_url, scopes={'a2a.invoke': 'call the agent'})
    scheme = SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(
        flows=OAuthFlows(client_credentials=flow)))
    requirement = SecurityRequirement()
    requirement.schemes['oauth'].list.extend(['a2a.invoke'])
    return {'security_schemes': {'oauth': scheme}, 'security_requirements': [requirement]}


def guard(app: Any) -> Any:
    """The ASGI app behind a bearer check, when REQUIRE_BEARER_JWKS is set."""
    jwks = os.environ.get('REQUIRE_BEARER_JWKS')
    if not jwks:
        return app
    import jwt
    keys = jwt.PyJWKClient(jwks, cache_keys=True)
    audience = os.environ.get('REQUIRE_BEARER_AUDIENCE') or None
    issuer = os.environ.get('REQUIRE_BEARER_ISSUER') or None
    # PyJWT refuses a token with `aud` when no audience is asked for: unset means "any".
    options = {'require': ['exp', 'sub', 'aud'], 'verify_aud': audience is not None}
    to_reject = int(os.environ.get('REJECT_FIRST_TOKENS', '0') or 0)
    # Tokens refused on purpose stay refused, so a gateway that retries with the
    # same (cached) token fails again instead of passing by luck.
    rejected: set[str] = set()

    def verify(token: str) -> dict[str, Any]:
        # Blocking (the JWKS fetch is urllib): run in a thread, off the event loop.
        key = keys.get_signing_key_from_jwt(token)
        return jwt.decode(token, key.key, algorithms=['RS256', 'ES256', 'EdDSA'],
                          audience=audience, issuer=issuer, options=options)

    async def send_json(send: Any, status: int, body: Any, headers: list | None = None) -> None:
        payload = json.dumps(body).encode()
        await send({'type': 'http.response.start', 'status': status,
                    'headers': [(b'content-type', b'application/json')] + (headers or [])})
        await send({'type': 'http.response.body', 'body': payload})

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope['type'] != 'http' or scope['path'].startswith('/.well-known/'):
            return await app(scope, receive, send)
        if scope['path'] == '/test/bearer':
            return await send_json(send, 200, TESTED)
        headers = dict(scope.get('headers') or [])
        authorization = headers.get(b'authorization', b'').decode('latin-1')
        # RFC 6750 3: no credentials, a bare challenge; a refused token, invalid_token.
        challenge = [(b'www-authenticate', b'Bearer realm="agent"')]
        invalid = [(b'www-authenticate', b'Bearer realm="agent", error="invalid_token"')]
        scheme, _, token = authorization.partition(' ')
        if scheme.lower() != 'bearer' or not token.strip():
            TESTED.append({'refused': 'no bearer token'})
            return await send_json(send, 401, {'error': 'no bearer token'}, challenge)
        token = token.strip()
        try:
            claims = await asyncio.to_thread(verify, token)
        except Exception as error:  # noqa: BLE001 - any failure is a refusal
            TESTED.append({'refused': type(error).__name__})
            return await send_json(send, 401, {'error': 'invalid token'}, invalid)
        jti = claims.get('jti') or token
        if jti in rejected or len(rejected) < to_reject:
            rejected.add(jti)
            TESTED.append({'refused': 'rejected on purpose', 'jti': claims.get('jti')})
            return await send_json(send, 401, {'error': 'token no longer accepted'}, invalid)
        seen = {k: claims.get(k) for k in ('sub', 'aud', 'client_id', 'jti')}
        if 'act' in claims:
            seen['act'] = claims['act']
        TESTED.append(seen)
        return await app(scope, receive, send)

    return guarded
