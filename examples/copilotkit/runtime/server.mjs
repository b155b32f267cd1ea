#!/usr/bin/env node
// The CopilotKit runtime (1.75.0) in front of agui-gateway: each CopilotKit
// agent is an @ag-ui/client HttpAgent posting to one of the gateway's named
// AG-UI endpoints, with the gateway's credential in its headers.
//
//   node server.mjs
//
// Environment:
//   AGUI_GATEWAY_URL      the gateway's base URL (default http://127.0.0.1:8080)
//   COPILOTKIT_AGENTS     the agents, comma-separated: `name` (the gateway's
//                         agent of that name) or `name=gatewayAgent`
//                         (default "assistant", the demo's agent)
//   AGUI_GATEWAY_TOKEN    an API key or a JWT for the gateway's [auth]; sent
//                         as `Authorization: Bearer <token>` (none by default)
//   PORT, HOST            where the runtime listens (default 127.0.0.1:4000);
//                         PORT=0 takes a free port
//
// Prints `runtime listening on http://HOST:PORT/api/copilotkit` once it takes
// requests. A CopilotKit frontend points its `runtimeUrl` there.

import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

// No telemetry leaves this machine (read when the runtime is imported, so
// set before the dynamic imports below).
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";
process.env.DO_NOT_TRACK ??= "1";

const { CopilotRuntime } = await import("@copilotkit/runtime/v2");
const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");
const { HttpAgent } = await import("@ag-ui/client");

/** `assistant,support=helpdesk` -> [["assistant", "assistant"], ["support", "helpdesk"]] */
export function parseAgents(list) {
    return list
        .split(",")
        .map((entry) => entry.trim())
        .filter(Boolean)
        .map((entry) => {
            const [name, target = name] = entry.split("=").map((s) => s.trim());
            return [name, target];
        });
}

/** The runtime's agents: one HttpAgent per gateway agent, on its own AG-UI URL. */
export function gatewayAgents({ gatewayUrl, agents, token }) {
    const base = gatewayUrl.replace(/\/+$/, "");
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    return Object.fromEntries(
        agents.map(([name, target]) => [
            name,
            new HttpAgent({
                // The named agent's endpoint. `${base}/agui` is the default
                // agent's; never the bare `${base}/`, which is the A2A proxy.
                url: `${base}/v1/agents/${encodeURIComponent(target)}/agui`,
                headers,
                description: `agui-gateway agent "${target}"`,
            }),
        ]),
    );
}

/** Starts the runtime's HTTP listener; resolves with the server and its URL. */
export async function startRuntime({ gatewayUrl, agents, token, port = 4000, host = "127.0.0.1" }) {
    const runtime = new CopilotRuntime({ agents: gatewayAgents({ gatewayUrl, agents, token }) });
    const listener = createCopilotNodeListener({
        runtime,
        basePath: "/api/copilotkit",
        // No managed channels here: nothing to connect to.
        activateChannels: false,
    });
    const server = http.createServer((req, res) => {
        listener(req, res).catch((error) => {
            console.error(`runtime: ${req.method} ${req.url} failed: ${error?.stack ?? error}`);
            if (!res.headersSent) res.writeHead(500).end();
            else res.end();
        });
    });
    await new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, resolve);
    });
    const address = server.address();
    return { server, url: `http://${host}:${address.port}/api/copilotkit` };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const gatewayUrl = process.env.AGUI_GATEWAY_URL ?? "http://127.0.0.1:8080";
    const agents = parseAgents(process.env.COPILOTKIT_AGENTS ?? "assistant");
    if (agents.length === 0) {
        console.error("server: COPILOTKIT_AGENTS names no agent");
        process.exit(2);
    }
    const token = process.env.AGUI_GATEWAY_TOKEN || undefined;
    const { server, url } = await startRuntime({
        gatewayUrl,
        agents,
        token,
        port: Number(process.env.PORT ?? 4000),
        host: process.env.HOST ?? "127.0.0.1",
    });
    const names = agents.map(([name, target]) => (name === target ? name : `${name} -> ${target}`)).join(", ");
    console.log(`runtime listening on ${url}`);
    console.log(`agents: ${names} at ${gatewayUrl}${token ? " (with a bearer token)" : ""}`);
    for (const signal of ["SIGINT", "SIGTERM"]) {
        process.on(signal, () => {
            server.closeAllConnections?.();
            server.close(() => process.exit(0));
        });
    }
}
