#!/usr/bin/env node
// A headless CopilotKit client: @copilotkit/core's CopilotKitCore (the class
// under <CopilotChat>), talking HTTP to the runtime of server.mjs, which
// talks AG-UI to agui-gateway. Prints the conversation as it streams.
//
//   node client.mjs [--runtime URL] [--agent NAME] [--timeout-ms N] [--json] [MESSAGE ...]
//
//   --runtime     the runtime's URL (default http://127.0.0.1:4000/api/copilotkit)
//   --agent       the CopilotKit agent to talk to (default "assistant")
//   --timeout-ms  for everything (default 30000)
//   --json        after the conversation, one JSON line with what was seen
//   MESSAGE       one turn each, in one thread (default "Weather in Tokyo?")
//
// Exits 0 when every turn's run finished, 1 when a run failed, 2 on a usage
// error.
//
// In a browser, CopilotKitCore finds the runtime's agents itself (GET /info)
// once `window` exists; in Node it does not, so the proxy agent comes from
// its public registerProxiedAgent(), which asks GET /info on its own.

import { randomUUID } from "node:crypto";

const opts = {
    runtime: "http://127.0.0.1:4000/api/copilotkit",
    agent: "assistant",
    timeoutMs: 30000,
    json: false,
    messages: [],
};
{
    const argv = process.argv.slice(2);
    const usage = (message) => {
        if (message) console.error(`client: ${message}`);
        console.error("usage: node client.mjs [--runtime URL] [--agent NAME] [--timeout-ms N] [--json] [MESSAGE ...]");
        process.exit(2);
    };
    for (let i = 0; i < argv.length; i++) {
        const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${argv[i]} needs a value`));
        switch (argv[i]) {
            case "--runtime":
                opts.runtime = value();
                break;
            case "--agent":
                opts.agent = value();
                break;
            case "--timeout-ms":
                opts.timeoutMs = Number(value());
                if (!(opts.timeoutMs > 0)) usage("--timeout-ms must be positive");
                break;
            case "--json":
                opts.json = true;
                break;
            case "-h":
            case "--help":
                usage();
                break;
            default:
                if (argv[i].startsWith("--")) usage(`unknown option ${argv[i]}`);
                opts.messages.push(argv[i]);
        }
    }
    if (opts.messages.length === 0) opts.messages.push("Weather in Tokyo?");
}

// Library chatter goes to stderr; stdout is the conversation (and the report).
const out = (text) => process.stdout.write(text);
for (const level of ["log", "info", "debug", "warn"]) console[level] = console.error.bind(console);

const { CopilotKitCore } = await import("@copilotkit/core");

// What the client saw, for --json.
const seen = {
    agent: opts.agent,
    turns: [],
    eventCounts: {},
    custom: [],
    errors: [],
};
let turn = null;

const timer = setTimeout(() => {
    seen.errors.push(`timed out after ${opts.timeoutMs} ms`);
    finish();
}, opts.timeoutMs);

let finished = false;
function finish() {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    const ok = seen.errors.length === 0 && seen.turns.length === opts.messages.length && seen.turns.every((t) => t.finished);
    if (opts.json) out(`${JSON.stringify({ ok, ...seen })}\n`);
    process.exit(ok ? 0 : 1);
}

const copilotkit = new CopilotKitCore({ runtimeUrl: opts.runtime });
copilotkit.subscribe({
    onError: ({ error, code }) => {
        seen.errors.push(`${code}: ${error?.message ?? error}`);
    },
});
const { agent } = copilotkit.registerProxiedAgent({ agentId: opts.agent, runtimeAgentId: opts.agent });
agent.threadId = randomUUID();

// Notes to print after the text they refer to (a citation arrives mid-message).
let pendingNotes = [];
let inText = false;
const note = (text) => (inText ? pendingNotes.push(text) : out(`  · ${text}\n`));

agent.subscribe({
    onEvent: ({ event }) => {
        seen.eventCounts[event.type] = (seen.eventCounts[event.type] ?? 0) + 1;
    },
    onRunStartedEvent: ({ event }) => {
        turn.runId = event.runId;
    },
    onTextMessageStartEvent: () => {
        inText = true;
        out("assistant: ");
    },
    onTextMessageContentEvent: ({ event }) => {
        turn.text += event.delta;
        turn.textChunks += 1;
        out(event.delta);
    },
    onTextMessageEndEvent: () => {
        inText = false;
        out("\n");
        for (const text of pendingNotes) out(`  · ${text}\n`);
        pendingNotes = [];
    },
    onReasoningMessageContentEvent: ({ event }) => {
        turn.reasoning += event.delta;
    },
    onReasoningEndEvent: () => {
        note(`thinking: ${turn.reasoning}`);
    },
    onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) => {
        turn.toolCalls.push({ id: event.toolCallId, name: toolCallName, args: toolCallArgs, result: null });
    },
    onToolCallResultEvent: ({ event }) => {
        const call = turn.toolCalls.find((c) => c.id === event.toolCallId);
        if (call) call.result = event.content;
        note(`tool ${call?.name ?? event.toolCallId}(${JSON.stringify(call?.args ?? {})}) -> ${event.content}`);
    },
    // The gateway's CUSTOM events (docs/mapping.md): the ones this client
    // shows; every one is recorded for --json.
    onCustomEvent: ({ event }) => {
        const { name, value } = event;
        seen.custom.push(name);
        switch (name) {
            case "a2a.trajectory":
                note(`step ${value?.title ?? ""}: ${value?.content ?? ""}`);
                break;
            case "a2a.citation": {
                const cited = Number.isInteger(value?.startIndex) ? turn.text.slice(value.startIndex, value.endIndex) : "";
                note(`source${cited ? ` for "${cited}"` : ""}: ${value?.title ?? ""} <${value?.url ?? ""}>`);
                break;
            }
            case "a2a.commands":
                for (const command of Array.isArray(value) ? value : [value]) {
                    const params = Object.fromEntries((command?.params ?? []).map((p) => [p.name, p.value]));
                    turn.commands.push({ name: command?.name, params });
                    note(`command ${command?.name} ${JSON.stringify(params)}`);
                }
                break;
            case "a2a.status":
                turn.taskState = value?.state;
                break;
        }
    },
    onRunFinishedEvent: ({ event }) => {
        turn.finished = true;
        note(`run finished${event.result?.state ? ` (task ${event.result.state})` : ""}`);
    },
    onRunErrorEvent: ({ event }) => {
        seen.errors.push(`RUN_ERROR ${event.code ?? ""}: ${event.message}`);
        note(`run failed: ${event.code ?? ""} ${event.message}`);
    },
    onRunFailed: ({ error }) => {
        seen.errors.push(`run failed: ${error?.message ?? error}`);
    },
});

try {
    // What <CopilotChat> does on mount, then per message what it does on send.
    await copilotkit.connectAgent({ agent });
    for (const message of opts.messages) {
        turn = { user: message, runId: null, text: "", textChunks: 0, reasoning: "", toolCalls: [], commands: [], taskState: null, finished: false };
        seen.turns.push(turn);
        out(`you: ${message}\n`);
        agent.addMessage({ id: randomUUID(), role: "user", content: message });
        await copilotkit.runAgent({ agent });
        if (!turn.finished) break;
    }
} catch (error) {
    seen.errors.push(`client: ${error?.message ?? error}`);
}
for (const error of seen.errors) console.error(`client: ${error}`);
finish();
