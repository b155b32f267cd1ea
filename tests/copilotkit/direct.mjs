#!/usr/bin/env node
// @copilotkit/core 1.75.0 with runtimeUrl pointed at agui-gateway itself
// (`<gateway>/copilotkit`): no CopilotKit runtime in between.
//
//   node direct.mjs --runtime-url URL --agent NAME --thread ID --phase PHASE
//                   [--transport rest|single] [--text TEXT] [--tool get_weather]
//                   [--header "Name: value"] [--timeout-ms N]
//
// Phases (one CopilotKitCore each, as one page load):
//   turn     connectAgent (what <CopilotChat> does on mount), then one user
//            message `--text` and runAgent; reports the thread's messages;
//   restore  connectAgent on a fresh core (a reload); reports the messages
//            it restored, then connectAgent again on the same core (a client
//            that still holds them) and reports them again;
//   stop     one user message `--text` (a long run), runAgent, and stopAgent
//            once its first text arrives; reports how long the run took to
//            end after the stop.
//
// `--tool get_weather` registers a frontend tool (CopilotKit runs it in the
// page and runs the agent again with its result), answering
// {"temperature":21,"city":<city>}.
//
// `--header` is sent on every request (CopilotKitCore's `headers`): who the
// caller is, for the gateway.
//
// It asserts nothing. stdout: one JSON line
//   {phase, info, messages, again, stopToEndMs, runErrors, error}
// where `messages` and `again` are "role: content" strings in thread order
// (an assistant's calls as "role: content [name(args)]", a tool's result as
// "tool: content"). Exit 0 when the
// line is printed, 1 when the harness itself failed, 2 on a usage error.
// Every wait is bounded by --timeout-ms (default 30000).

import { writeSync } from "node:fs";

const opts = { transport: "rest", text: "chunks", tool: null, header: null, timeoutMs: 30000 };
{
    const args = process.argv.slice(2);
    const names = {
        "--runtime-url": "runtimeUrl", "--agent": "agent", "--thread": "thread", "--phase": "phase",
        "--transport": "transport", "--text": "text", "--tool": "tool", "--header": "header", "--timeout-ms": "timeoutMs",
    };
    for (let i = 0; i < args.length; i += 2) {
        const key = names[args[i]];
        if (!key || args[i + 1] === undefined) {
            process.stderr.write(`usage: unknown or incomplete option ${args[i]}\n`);
            process.exit(2);
        }
        opts[key] = key === "timeoutMs" ? Number(args[i + 1]) : args[i + 1];
    }
    if (!opts.runtimeUrl || !opts.agent || !opts.thread || !["turn", "restore", "stop"].includes(opts.phase)) {
        process.stderr.write("usage: --runtime-url, --agent, --thread and --phase turn|restore|stop are required\n");
        process.exit(2);
    }
    if (opts.header !== null && !/^[A-Za-z0-9-]+: ./.test(opts.header)) {
        process.stderr.write("usage: --header \"Name: value\"\n");
        process.exit(2);
    }
    if (opts.tool !== null && opts.tool !== "get_weather") {
        process.stderr.write("usage: --tool get_weather is the one tool there is\n");
        process.exit(2);
    }
}

const line = { phase: opts.phase, info: null, messages: [], again: [], stopToEndMs: null, runErrors: [], error: null };
let printed = false;
function finish(error) {
    if (printed) return;
    printed = true;
    line.error = error;
    writeSync(1, `${JSON.stringify(line)}\n`);
    process.exit(0);
}
setTimeout(() => finish(`timed out after ${opts.timeoutMs} ms`), opts.timeoutMs).unref();

// CopilotKit takes tool parameters as a Standard Schema; one that also
// implements Standard JSON Schema V1 hands CopilotKit its JSON Schema as is.
const weatherSchema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const getWeather = {
    name: "get_weather",
    description: "Get the weather for a city",
    parameters: {
        "~standard": {
            version: 1,
            vendor: "agui-gateway-test",
            validate: (value) => ({ value }),
            jsonSchema: { input: () => structuredClone(weatherSchema), output: () => structuredClone(weatherSchema) },
        },
    },
    handler: async (args) => JSON.stringify({ temperature: 21, city: args?.city }),
};

function summary(messages) {
    return messages.map((m) => {
        const content = typeof m.content === "string" ? m.content : "";
        if (m.role === "tool") return `tool: ${content}`;
        const calls = (m.toolCalls ?? []).map((c) => ` [${c.function?.name}(${c.function?.arguments})]`).join("");
        return `${m.role}: ${content}${calls}`;
    });
}

async function main() {
    const { CopilotKitCore } = await import("@copilotkit/core");
    const headers = {};
    if (opts.header) {
        const at = opts.header.indexOf(":");
        headers[opts.header.slice(0, at)] = opts.header.slice(at + 1).trim();
    }
    const info = await fetch(`${opts.runtimeUrl}/info`, { headers });
    const infoBody = await info.json();
    line.info = {
        status: info.status,
        agents: Object.keys(infoBody?.agents ?? {}),
        threadList: infoBody?.threadEndpoints?.list ?? null,
    };

    const copilotkit = new CopilotKitCore({
        runtimeUrl: opts.runtimeUrl,
        runtimeTransport: opts.transport,
        headers,
        tools: opts.tool ? [getWeather] : [],
    });
    copilotkit.subscribe({
        onError: ({ error, code }) => line.runErrors.push(`${code}: ${error?.message ?? error}`),
    });
    const { agent } = copilotkit.registerProxiedAgent({ agentId: opts.agent, runtimeAgentId: opts.agent });
    agent.threadId = opts.thread;
    agent.subscribe({
        onRunErrorEvent: ({ event }) => line.runErrors.push(`RUN_ERROR ${event.code}: ${event.message}`),
    });

    await copilotkit.connectAgent({ agent });
    if (opts.phase === "restore") {
        line.messages = summary(agent.messages);
        await copilotkit.connectAgent({ agent });
        line.again = summary(agent.messages);
        return finish(null);
    }
    agent.addMessage({ id: `user-${Date.now()}`, role: "user", content: opts.text });
    if (opts.phase === "turn") {
        await copilotkit.runAgent({ agent });
        line.messages = summary(agent.messages);
        return finish(null);
    }
    // stop: the first text of the long run, then stopAgent.
    let stoppedAt = null;
    const firstText = new Promise((resolve) => {
        agent.subscribe({ onTextMessageContentEvent: () => resolve() });
    });
    const run = copilotkit.runAgent({ agent }).catch((error) => {
        line.runErrors.push(`run: ${error?.message ?? error}`);
    });
    await firstText;
    stoppedAt = Date.now();
    copilotkit.stopAgent({ agent });
    await run;
    line.stopToEndMs = Date.now() - stoppedAt;
    line.messages = summary(agent.messages);
    finish(null);
}

main().catch((error) => finish(`harness failed: ${error?.stack ?? error}`));
