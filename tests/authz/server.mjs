#!/usr/bin/env node
// A real OAuth2 authorization server (oidc-provider 9.13) for the gateway's
// upstream-identity tests, on loopback:
//
//   node server.mjs [--port 0] [--ttl SECONDS]
//
// prints `READY <port>` once it listens. Issuer http://127.0.0.1:<port>;
// `/token`, `/jwks` (and discovery) are oidc-provider's own.
//
// Clients, each with the secret `<id>-secret`:
//   gateway                     the gateway: client credentials, and RFC
//                               8693 token exchange (its own grant, below)
//   gateway-post                the gateway configured for client_secret_post
//   alice, bob                  stand-ins for users: client credentials
//                               tokens for the gateway's audience, so the
//                               gateway can verify them as callers' JWTs
// oidc-provider takes the secret by either method (HTTP Basic or the form's
// client_id + client_secret) whatever a client registered, so the method
// the gateway really used is counted in /test/requests instead (`auth`).
// A wrong secret is 401 invalid_client.
//
// Every access token is a JWT (header `typ: at+jwt`, `kid: test-key-1`,
// RS256) signed with a key made at start, published at `/jwks` (the
// discovery document's `jwks_uri`); `iss` is the issuer, `aud` the
// `resource` asked for (else the `audience` field, else
// https://agent.test/), `exp` `--ttl` seconds on (default 300, also the
// answer's `expires_in`); `scope` is "a2a.invoke" when asked for (client
// credentials) or always (exchange).
//
// Client credentials: `sub` and `client_id` are both the client's id
// (oidc-provider sets `sub` to the client_id when no user is involved),
// e.g. {sub: "gateway", client_id: "gateway", aud: "https://agent.test/"};
// alice's token for the gateway is {sub: "alice", client_id: "alice",
// aud: "https://gateway.test/"}.
//
// Token exchange (only the `gateway` client may use it): the subject token
// must be an access token of ours (signature, issuer, `typ`) whose `aud` is
// https://gateway.test/ (the gateway's own), else 400 invalid_grant. The
// new token's `aud` is `resource` (else `audience`, else the default),
// `sub` the subject's and `client_id` the exchanging client's: {sub:
// "alice", client_id: "gateway", aud: "https://agent.test/"}. An actor token
// (the gateway's client-credentials token), when sent, must verify too and
// becomes RFC 8693's `act: {sub: <actor's sub>}` claim.
//
// GET /test/requests answers {grants: {client_credentials: N,
// "urn:…:token-exchange": N}, auth: {client_secret_basic: N,
// client_secret_post: N}, failures: N}: tokens issued per grant and per
// client authentication method, and refused token requests (any error:
// bad secret, bad subject token, grant not allowed). Tests count these.
// Loopback only; nothing is stored on disk.

import { exportJWK, generateKeyPair, createLocalJWKSet, jwtVerify } from "jose";
import Provider, { errors } from "oidc-provider";

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
const GATEWAY_AUDIENCE = "https://gateway.test/";
const DEFAULT_RESOURCE = "https://agent.test/";

const opts = { port: 0, ttl: 300 };
{
    const args = process.argv.slice(2);
    for (let i = 0; i < args.length; i += 2) {
        const key = { "--port": "port", "--ttl": "ttl" }[args[i]];
        const value = Number(args[i + 1]);
        if (!key || !Number.isInteger(value) || value < 0) {
            process.stderr.write(`usage: node server.mjs [--port N] [--ttl SECONDS] (${args[i]}?)\n`);
            process.exit(2);
        }
        opts[key] = value;
    }
}

const { privateKey } = await generateKeyPair("RS256", { extractable: true });
const signing = { ...(await exportJWK(privateKey)), use: "sig", alg: "RS256", kid: "test-key-1" };
const { d, p, q, dp, dq, qi, ...publicJwk } = signing;
const ownKeys = createLocalJWKSet({ keys: [publicJwk] });

const counts = { grants: {}, auth: {}, failures: 0 };
const client = (id, grants) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: grants,
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: "client_secret_basic",
});

async function start() {
    // The port is known only once the server listens; the issuer needs it.
    const http = await import("node:http");
    const server = http.createServer();
    await new Promise((resolve) => server.listen(opts.port, "127.0.0.1", resolve));
    const { port } = server.address();
    const issuer = `http://127.0.0.1:${port}`;
    const provider = new Provider(issuer, {
        clients: [
            client("gateway", ["client_credentials", TOKEN_EXCHANGE]),
            client("alice", ["client_credentials"]),
            client("bob", ["client_credentials"]),
            { ...client("gateway-post", ["client_credentials"]), token_endpoint_auth_method: "client_secret_post" },
        ],
        jwks: { keys: [signing] },
        features: {
            clientCredentials: { enabled: true },
            devInteractions: { enabled: false },
            resourceIndicators: {
                enabled: true,
                // oidc-provider drops an `audience` form field from client
                // credentials requests; read it raw so a gateway configured
                // with `audience` (and no `resource`) gets that audience.
                defaultResource: (ctx) =>
                    typeof ctx.oidc.body?.audience === "string" ? ctx.oidc.body.audience : DEFAULT_RESOURCE,
                useGrantedResource: () => true,
                getResourceServerInfo: (_ctx, resource) => ({
                    scope: "a2a.invoke",
                    audience: resource,
                    accessTokenFormat: "jwt",
                    accessTokenTTL: opts.ttl,
                }),
            },
        },
        ttl: { ClientCredentials: opts.ttl, AccessToken: opts.ttl },
        // The exchange handler leaves the verified actor on the request;
        // this is how a claim gets into a minted JWT (`act`, RFC 8693 4.1).
        extraTokenClaims: (ctx, token) =>
            token.gty === "token-exchange" && ctx?.tokenExchangeActor
                ? { act: { sub: ctx.tokenExchangeActor } }
                : undefined,
    });
    // grant.success fires after a handler returned, grant.error for any
    // error thrown on the token route (client authentication included): so
    // the exchange handler throws, never answers an error itself.
    provider.on("grant.success", (ctx) => {
        const grant = ctx.oidc.params?.grant_type ?? "unknown";
        counts.grants[grant] = (counts.grants[grant] ?? 0) + 1;
        const method = ctx.headers.authorization ? "client_secret_basic" : "client_secret_post";
        counts.auth[method] = (counts.auth[method] ?? 0) + 1;
    });
    provider.on("grant.error", () => {
        counts.failures += 1;
    });

    provider.registerGrantType(
        TOKEN_EXCHANGE,
        async (ctx) => {
            const { params } = ctx.oidc;
            const invalidGrant = (description) => new errors.CustomOIDCProviderError("invalid_grant", description);
            if (params.subject_token === undefined) {
                throw new errors.InvalidRequest("subject_token is missing");
            }
            if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
                throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
            }
            if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
                throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
            }
            let subject;
            try {
                ({ payload: subject } = await jwtVerify(params.subject_token, ownKeys, {
                    issuer,
                    audience: GATEWAY_AUDIENCE,
                    typ: "at+jwt",
                }));
            } catch (error) {
                throw invalidGrant(`subject_token: ${error.code ?? "invalid"} ${error.message ?? ""}`.trim());
            }
            if (params.actor_token !== undefined) {
                // RFC 8693 2.1: actor_token_type is required with an actor token.
                if (params.actor_token_type !== ACCESS_TOKEN_TYPE) {
                    throw new errors.InvalidRequest(`actor_token_type must be ${ACCESS_TOKEN_TYPE}`);
                }
                try {
                    const { payload: actor } = await jwtVerify(params.actor_token, ownKeys, { issuer, typ: "at+jwt" });
                    ctx.tokenExchangeActor = actor.sub;
                } catch (error) {
                    throw invalidGrant(`actor_token: ${error.code ?? "invalid"} ${error.message ?? ""}`.trim());
                }
            }
            // `resource` (RFC 8707) is what the gateway's `resource` key
            // sends, `audience` (RFC 8693) its `audience` key: either names
            // the agent.
            const resource = params.resource ?? params.audience ?? DEFAULT_RESOURCE;
            const token = new ctx.oidc.provider.AccessToken({
                accountId: subject.sub,
                client: ctx.oidc.client,
                gty: "token-exchange",
                scope: "a2a.invoke",
            });
            token.resourceServer = new ctx.oidc.provider.ResourceServer(resource, {
                scope: "a2a.invoke",
                audience: resource,
                accessTokenFormat: "jwt",
                accessTokenTTL: opts.ttl,
            });
            const value = await token.save();
            ctx.body = {
                access_token: value,
                issued_token_type: ACCESS_TOKEN_TYPE,
                token_type: "Bearer",
                expires_in: opts.ttl,
            };
        },
        ["subject_token", "subject_token_type", "actor_token", "actor_token_type", "resource", "audience", "scope", "requested_token_type"],
    );

    const app = provider.callback();
    server.on("request", (req, res) => {
        if (req.method === "GET" && req.url === "/test/requests") {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify(counts));
            return;
        }
        app(req, res);
    });
    process.stdout.write(`READY ${port}\n`);
}

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
start().catch((error) => {
    process.stderr.write(`authz server failed: ${error?.stack ?? error}\n`);
    process.exit(1);
});
