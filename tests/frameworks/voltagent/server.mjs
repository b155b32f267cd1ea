// VoltAgent agent served by @voltagent/a2a-server (through @voltagent/server-hono), driven by a
// scripted AI SDK model (MockLanguageModelV3 from `ai/test`).
//
// Run after `bash tests/frameworks/setup.sh voltagent`:
//   node tests/frameworks/voltagent/server.mjs --port 0
// Listens on 127.0.0.1 only, prints `READY <port>` once it accepts connections; SIGTERM/SIGINT
// stop it (status 0). The A2A endpoint is POST /a2a/weather-agent (the A2A server's id and the
// agent's id must be the same: VoltAgent uses the path segment for both).
//
// Scenario `weather` (every request): turn 1 streams the reasoning "I should look " +
// "up the weather." and then calls get_weather {"city":"Paris"} (id call_weather_1); the tool
// returns "21C"; turn 2 (a tool result in the prompt) streams "It is ", "21C ", "in Paris.".
//
// No network: NODE_ENV=production turns off VoltAgent's models.dev registry refresh (started at
// import time otherwise), and a fetch guard refuses every non-loopback URL (VoltAgent's server
// fetches an announcements file from GitHub on start). Everything VoltAgent prints goes to
// stderr; stdout carries only the READY line.
import net from 'node:net';
import { isolate } from '../_peer.mjs';

process.env.NODE_ENV = 'production';

const { args, ready } = isolate();
const HOST = args.host;

const { Agent, VoltAgent, createTool } = await import('@voltagent/core');
const { A2AServer } = await import('@voltagent/a2a-server');
const { honoServer } = await import('@voltagent/server-hono');
const { createPinoLogger } = await import('@voltagent/logger');
const { MockLanguageModelV3, simulateReadableStream } = await import('ai/test');
const { z } = await import('zod');

const AGENT_ID = 'weather-agent';
const THOUGHT = ['I should look ', 'up the weather.'];
const ANSWER = ['It is ', '21C ', 'in Paris.'];

function usage(output) {
    return {
        inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: output, text: output, reasoning: undefined },
    };
}

/** The stream parts of the next turn: the answer once a get_weather result is in the prompt. */
function nextTurn(prompt) {
    const hasResult = prompt.some((message) => message.role === 'tool' && message.content.some(
        (part) => part.type === 'tool-result' && part.toolName === 'get_weather'));
    const parts = [{ type: 'stream-start', warnings: [] }];
    if (hasResult) {
        parts.push({ type: 'text-start', id: 'text-1' });
        for (const delta of ANSWER) parts.push({ type: 'text-delta', id: 'text-1', delta });
        parts.push({ type: 'text-end', id: 'text-1' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(3) });
        return parts;
    }
    parts.push({ type: 'reasoning-start', id: 'reasoning-1' });
    for (const delta of THOUGHT) parts.push({ type: 'reasoning-delta', id: 'reasoning-1', delta });
    parts.push({ type: 'reasoning-end', id: 'reasoning-1' });
    parts.push({ type: 'tool-call', toolCallId: 'call_weather_1', toolName: 'get_weather',
                 input: JSON.stringify({ city: 'Paris' }) });
    parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(2) });
    return parts;
}

const model = new MockLanguageModelV3({
    provider: 'scripted',
    modelId: 'scripted-weather',
    doStream: async (options) => ({
        stream: simulateReadableStream({ chunks: nextTurn(options.prompt), chunkDelayInMs: 5 }),
    }),
    doGenerate: async () => {
        throw new Error('the scripted model only streams');
    },
});

const getWeather = createTool({
    name: 'get_weather',
    description: 'Returns the current weather of a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => '21C',
});

const agent = new Agent({
    id: AGENT_ID,
    name: AGENT_ID,
    purpose: 'Scripted VoltAgent weather agent.',
    instructions: 'Answer weather questions with the get_weather tool.',
    model,
    tools: [getWeather],
    maxSteps: 5,
});

async function freePort(host) {
    return new Promise((resolve, reject) => {
        const probe = net.createServer();
        probe.once('error', reject);
        probe.listen(0, host, () => {
            const { port } = probe.address();
            probe.close(() => resolve(port));
        });
    });
}

function canConnect(host, port) {
    return new Promise((resolve) => {
        const socket = net.connect({ host, port });
        socket.once('connect', () => { socket.destroy(); resolve(true); });
        socket.once('error', () => resolve(false));
    });
}

const port = Number(args.port) || await freePort(HOST);
const voltAgent = new VoltAgent({
    agents: { [AGENT_ID]: agent },
    a2aServers: {
        weather: new A2AServer({ id: AGENT_ID, name: AGENT_ID, version: '1.0.0',
                                 description: 'Scripted VoltAgent weather agent.' }),
    },
    server: honoServer({ port, hostname: HOST, enableSwaggerUI: false }),
    logger: createPinoLogger({ name: 'voltagent-peer', level: 'warn' }),
    checkDependencies: false,
});

let stopping = false;
async function stop() {
    if (stopping) return;
    stopping = true;
    const timeout = new Promise((resolve) => setTimeout(resolve, 3000).unref());
    await Promise.race([voltAgent.shutdown().catch(() => {}), timeout]);
    process.exit(0);
}
// VoltAgent installs its own SIGTERM/SIGINT handlers; with ours there too it does not exit
// itself, so the exit status is ours.
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

const deadline = Date.now() + 30000;
while (!(await canConnect(HOST, port))) {
    if (Date.now() > deadline) {
        console.error(`voltagent server did not listen on ${HOST}:${port} within 30 s`);
        process.exit(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
}
ready(port);
