// Mastra agent served by Mastra's own HTTP server (`createNodeServer` from @mastra/deployer/server,
// the server `mastra dev` / `mastra build` run), whose A2A routes call @mastra/server's
// handlers; driven by a scripted AI SDK v5 model (MockLanguageModelV2 from `ai/test`).
//
// Run after `bash tests/frameworks/setup.sh mastra`:
//   node tests/frameworks/mastra/server.mjs --port 0
// Listens on 127.0.0.1 only, prints `READY <port>` once it accepts connections; SIGTERM/SIGINT
// stop it (status 0). The A2A endpoint is POST /a2a/weather-agent (card:
// GET /.well-known/weather-agent/agent-card.json).
//
// Mastra 0.24.9 is the newest release whose engines allow Node 20 (1.x needs Node >= 22.13).
//
// Scenario `weather` (every request): turn 1 is the reasoning "I should look " +
// "up the weather." and then the call get_weather {"city":"Paris"} (id call_weather_1); the tool
// returns "21C"; turn 2 (a tool result in the prompt) is "It is ", "21C ", "in Paris.". Both
// model entry points follow the same script: doStream streams those chunks, doGenerate returns
// the same content in one piece (Mastra's A2A `message/stream` handler calls agent.generate).
// Each call is logged on stderr.
//
// No network: a fetch guard refuses every non-loopback URL. Everything Mastra prints goes to
// stderr; stdout carries only the READY line.
import { isolate } from '../_peer.mjs';

const { args, ready } = isolate();

const { Mastra } = await import('@mastra/core/mastra');
const { Agent } = await import('@mastra/core/agent');
const { createTool } = await import('@mastra/core/tools');
const { ConsoleLogger } = await import('@mastra/core/logger');
const { createNodeServer } = await import('@mastra/deployer/server');
const { MockLanguageModelV2, simulateReadableStream } = await import('ai/test');
const { z } = await import('zod');

const AGENT_ID = 'weather-agent';
const THOUGHT = ['I should look ', 'up the weather.'];
const ANSWER = ['It is ', '21C ', 'in Paris.'];
const CALL = { toolCallId: 'call_weather_1', toolName: 'get_weather', input: JSON.stringify({ city: 'Paris' }) };

function hasWeatherResult(prompt) {
    return prompt.some((message) => message.role === 'tool' && message.content.some(
        (part) => part.type === 'tool-result' && part.toolName === 'get_weather'));
}

function streamParts(prompt) {
    const parts = [{ type: 'stream-start', warnings: [] }];
    if (hasWeatherResult(prompt)) {
        parts.push({ type: 'text-start', id: 'text-1' });
        for (const delta of ANSWER) parts.push({ type: 'text-delta', id: 'text-1', delta });
        parts.push({ type: 'text-end', id: 'text-1' });
        parts.push({ type: 'finish', finishReason: 'stop',
                     usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 } });
        return parts;
    }
    parts.push({ type: 'reasoning-start', id: 'reasoning-1' });
    for (const delta of THOUGHT) parts.push({ type: 'reasoning-delta', id: 'reasoning-1', delta });
    parts.push({ type: 'reasoning-end', id: 'reasoning-1' });
    parts.push({ type: 'tool-call', ...CALL });
    parts.push({ type: 'finish', finishReason: 'tool-calls',
                 usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } });
    return parts;
}

function generated(prompt) {
    const answer = hasWeatherResult(prompt);
    return {
        content: answer
            ? [{ type: 'text', text: ANSWER.join('') }]
            : [{ type: 'reasoning', text: THOUGHT.join('') }, { type: 'tool-call', ...CALL }],
        finishReason: answer ? 'stop' : 'tool-calls',
        usage: { inputTokens: 10, outputTokens: answer ? 3 : 2, totalTokens: answer ? 13 : 12 },
        warnings: [],
    };
}

const model = new MockLanguageModelV2({
    provider: 'scripted',
    modelId: 'scripted-weather',
    doStream: async (options) => {
        console.error(`[scripted model] doStream (${hasWeatherResult(options.prompt) ? 'answer' : 'call'})`);
        return { stream: simulateReadableStream({ chunks: streamParts(options.prompt), chunkDelayInMs: 5 }) };
    },
    doGenerate: async (options) => {
        console.error(`[scripted model] doGenerate (${hasWeatherResult(options.prompt) ? 'answer' : 'call'})`);
        return generated(options.prompt);
    },
});

const getWeather = createTool({
    id: 'get_weather',
    description: 'Returns the current weather of a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async () => '21C',
});

const agent = new Agent({
    id: AGENT_ID,
    name: AGENT_ID,
    description: 'Scripted Mastra weather agent.',
    instructions: 'Answer weather questions with the get_weather tool.',
    model,
    tools: { get_weather: getWeather },
});

const mastra = new Mastra({
    agents: { weatherAgent: agent },
    server: { port: Number(args.port), host: args.host },
    logger: new ConsoleLogger({ name: 'mastra-peer', level: 'warn' }),
    telemetry: { enabled: false },
});

const server = await createNodeServer(mastra, { tools: {} });
if (!server.listening) {
    await new Promise((resolve, reject) => {
        server.once('listening', resolve);
        server.once('error', reject);
    });
}

let stopping = false;
function stop() {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), 3000).unref();
    server.close(() => process.exit(0));
    server.closeAllConnections?.();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

ready(server.address().port);
