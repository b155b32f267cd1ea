#!/usr/bin/env node
// A frontend-tool round trip through the REAL CopilotKit runtime (1.75.0) in
// front of an AG-UI endpoint, driven by CopilotKit's own client class.
//
//   node roundtrip.mjs --agui-url URL [--timeout-ms N] [--verbose]
//   node roundtrip.mjs --self-test [--fake-mode MODE] [--timeout-ms N] [--verbose]
//
// What runs, all in this process except the AG-UI endpoint:
//   * the runtime: `new CopilotRuntime({ agents: { default: new HttpAgent({ url }) } })`
//     from @copilotkit/runtime/v2, served by the runtime's own Node listener
//     (`createCopilotNodeListener` from @copilotkit/runtime/v2/node, multi-route
//     REST mode: GET /info, POST /agent/:id/connect, POST /agent/:id/run) on
//     127.0.0.1:<free port> under /api/copilotkit;
//   * the client: @copilotkit/core's `CopilotKitCore` with the frontend tool
//     `get_weather`, talking HTTP to that listener through a
//     `ProxiedCopilotRuntimeAgent` (the class the browser uses). It does what
//     <CopilotChat> does: `copilotkit.connectAgent({ agent })` once, then per
//     user input `agent.addMessage({ role: "user", ... })` and
//     `copilotkit.runAgent({ agent })`. The tool execution and the follow-up
//     run (tool message appended, new runId, whole history, state, tools) are
//     CopilotKitCore's own code, not reproduced here.
//     One difference from a browser: CopilotKitCore discovers the runtime's
//     agents (GET /info) only when `window` exists, so in Node the proxy agent
//     comes from `copilotkit.registerProxiedAgent({ agentId: "default",
//     runtimeAgentId: "default" })`, CopilotKit's public API for that. The
//     proxy is the same ProxiedCopilotRuntimeAgent; it asks GET /info itself
//     (transport "auto" -> "rest") before its first request.
//
// Two turns in one thread, each the user text `clienttool`: the agent calls
// get_weather {"city":"Paris"}, CopilotKit runs the tool, runs the agent again,
// and the agent answers with text that contains the tool result.
//
// Bounded: at most 6 agent runs (requests the runtime sends to the AG-UI
// endpoint) and --timeout-ms (default 30000) for everything; past either the
// harness stops and reports failure instead of hanging.
//
// stdout: exactly one JSON line
//   {"ok","runs","toolExecutions","messages","toolCalls","argumentsValidJson",
//    "toolCallIdsUnique","error", ...extra diagnostics}
// exit 0 when ok, 1 when not, 2 on a usage error. Everything else (library
// logs, --verbose traces) goes to stderr.
//
// --self-test starts fake-agui.mjs (beside this file) and runs against it.
// --fake-mode loop|repeat-id|bad-args makes that fake misbehave (see its
// header); the report must then fail (exit 1).

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MAX_RUNS = 6;
const USER_TEXT = "clienttool";
const TURNS = 2;
const EXPECTED_TOOL_EXECUTIONS = 2;

// ---- stdout belongs to the report alone ---------------------------------
// Libraries log with console.* (and the runtime prints a telemetry notice);
// all of it goes to stderr. The report is written to fd 1 directly.
for (const level of ["log", "info", "debug", "trace"]) console[level] = console.error.bind(console);
process.stdout.write = process.stderr.write.bind(process.stderr);
// No telemetry calls out of this machine (read when the runtime is imported).
process.env.COPILOTKIT_TELEMETRY_DISABLED = "true";
process.env.DO_NOT_TRACK = "1";

// ---- arguments ------------------------------------------------------------
function usage(message) {
    if (message) process.stderr.write(`roundtrip: ${message}\n`);
    process.stderr.write(
        "usage: node roundtrip.mjs (--agui-url URL | --self-test [--fake-mode loop|repeat-id|bad-args]) [--timeout-ms N] [--verbose]\n",
    );
    process.exit(2);
}

const FAKE_MODES = ["loop", "repeat-id", "bad-args"];
const opts = { aguiUrl: null, timeoutMs: 30000, selfTest: false, fakeMode: null, verbose: false };
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        let [flag, value] = argv[i].split(/=(.*)/s, 2);
        const takeValue = () => {
            if (value !== undefined) return value;
            if (i + 1 >= argv.length) usage(`${flag} needs a value`);
            return argv[++i];
        };
        switch (flag) {
            case "--agui-url":
                opts.aguiUrl = takeValue();
                break;
            case "--timeout-ms":
                opts.timeoutMs = Number(takeValue());
                if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs <= 0) usage("--timeout-ms must be a positive integer");
                break;
            case "--self-test":
                opts.selfTest = true;
                break;
            case "--fake-mode":
                opts.fakeMode = takeValue();
                if (!FAKE_MODES.includes(opts.fakeMode)) usage(`--fake-mode is one of ${FAKE_MODES.join(", ")}`);
                break;
            case "--verbose":
                opts.verbose = true;
                break;
            case "--help":
            case "-h":
                usage();
                break;
            default:
                usage(`unknown argument ${argv[i]}`);
        }
    }
    if (opts.selfTest === (opts.aguiUrl !== null)) usage("give exactly one of --agui-url and --self-test");
    if (opts.fakeMode && !opts.selfTest) usage("--fake-mode only goes with --self-test");
}

const trace = (msg) => {
    if (opts.verbose) process.stderr.write(`roundtrip: ${msg}\n`);
};

// ---- state ----------------------------------------------------------------
const state = {
    runs: 0, // requests the runtime sent to the AG-UI endpoint
    toolExecutions: 0,
    turnsCompleted: 0,
    clientRunsStarted: 0, // RUN_STARTED events the client saw
    clientRunsFinished: 0, // RUN_FINISHED events the client saw
    streamToolCallIds: [], // toolCallId of every TOOL_CALL_START the client saw
    runErrors: [], // RUN_ERROR events, failed runs, CopilotKitCore errors
    runtimeRequests: [], // "METHOD /path -> status" as the runtime's listener saw them
    upstreamInputs: [], // the RunAgentInput bodies the runtime sent upstream
};
let agent = null; // the client's ProxiedCopilotRuntimeAgent
let fakeChild = null;
let server = null;
let timer = null;
let finished = false;

function toolCallsOf(messages) {
    return messages
        .filter((m) => m.role === "assistant" && Array.isArray(m.toolCalls))
        .flatMap((m) => m.toolCalls.map((tc) => ({ id: tc.id, name: tc.function?.name, arguments: tc.function?.arguments })));
}

function isJson(text) {
    if (typeof text !== "string") return false;
    try {
        JSON.parse(text);
        return true;
    } catch {
        return false;
    }
}

/** Print the report (once), clean up what this process started, and exit. */
function finish(error) {
    if (finished) return;
    finished = true;
    if (timer) clearTimeout(timer);

    const messages = agent ? JSON.parse(JSON.stringify(agent.messages)) : [];
    const toolCalls = toolCallsOf(messages);
    const ids = toolCalls.map((tc) => tc.id);
    const argumentsValidJson = toolCalls.every((tc) => isJson(tc.arguments));
    // Over the thread and over the stream: a TOOL_CALL_START that reuses an
    // earlier id does not make a second tool call in the thread, the AG-UI
    // client appends its arguments to the earlier call instead.
    const toolCallIdsUnique =
        new Set(ids).size === ids.length && new Set(state.streamToolCallIds).size === state.streamToolCallIds.length;

    let problem = error ?? null;
    if (!problem && state.runErrors.length > 0) problem = `run error: ${state.runErrors.join("; ")}`;
    if (!problem && state.turnsCompleted !== TURNS) problem = `${state.turnsCompleted} of ${TURNS} turns completed`;
    if (!problem && state.toolExecutions !== EXPECTED_TOOL_EXECUTIONS)
        problem = `${state.toolExecutions} tool executions, expected ${EXPECTED_TOOL_EXECUTIONS}`;
    if (!problem && !argumentsValidJson) problem = "tool-call arguments that are not valid JSON";
    if (!problem && !toolCallIdsUnique) problem = `tool-call ids repeat: ${JSON.stringify(state.streamToolCallIds)}`;
    if (!problem && state.clientRunsFinished !== state.runs)
        problem = `${state.runs} agent runs but the client saw ${state.clientRunsFinished} RUN_FINISHED`;

    const report = {
        ok: problem === null,
        threadId: agent?.threadId ?? null,
        runs: state.runs,
        toolExecutions: state.toolExecutions,
        messages,
        toolCalls,
        argumentsValidJson,
        toolCallIdsUnique,
        error: problem,
        turnsCompleted: state.turnsCompleted,
        clientRunsStarted: state.clientRunsStarted,
        clientRunsFinished: state.clientRunsFinished,
        runtimeRequests: state.runtimeRequests,
    };
    writeSync(1, `${JSON.stringify(report)}\n`);

    try {
        server?.closeAllConnections?.();
        server?.close();
    } catch {}
    try {
        fakeChild?.kill("SIGTERM");
    } catch {}
    process.exit(report.ok ? 0 : 1);
}

timer = setTimeout(() => finish(`timed out after ${opts.timeoutMs} ms (runs so far: ${state.runs})`), opts.timeoutMs);
process.on("uncaughtException", (e) => finish(`uncaught exception: ${e?.stack ?? e}`));
process.on("unhandledRejection", (e) => finish(`unhandled rejection: ${e?.stack ?? e}`));

// ---- the fake endpoint for --self-test ------------------------------------
function startFake() {
    return new Promise((resolve, reject) => {
        const args = [path.join(HERE, "fake-agui.mjs"), "--exit-on-stdin-close"];
        if (opts.verbose) args.push("--verbose");
        if (opts.fakeMode) args.push(`--${opts.fakeMode}`);
        fakeChild = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
        let buffered = "";
        fakeChild.stdout.setEncoding("utf8");
        fakeChild.stdout.on("data", (chunk) => {
            buffered += chunk;
            const m = /^READY (\d+)$/m.exec(buffered);
            if (m) resolve(`http://127.0.0.1:${m[1]}/agui`);
        });
        fakeChild.on("error", reject);
        fakeChild.on("exit", (code) => reject(new Error(`fake-agui.mjs exited early (code ${code})`)));
    });
}

// ---- the frontend tool ----------------------------------------------------
const WEATHER_SCHEMA = {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
};

// CopilotKit takes tool parameters as a Standard Schema; a schema that also
// implements Standard JSON Schema V1 hands CopilotKit its JSON Schema as is.
// This one wraps the plain JSON Schema above (no zod needed).
function jsonSchemaParameters(schema) {
    return {
        "~standard": {
            version: 1,
            vendor: "agui-gateway-test",
            validate: (value) => ({ value }),
            jsonSchema: {
                input: () => structuredClone(schema),
                output: () => structuredClone(schema),
            },
        },
    };
}

const weatherResult = (city) => JSON.stringify({ temperature: 21, city });

const getWeatherTool = {
    name: "get_weather",
    description: "Get the weather for a city",
    parameters: jsonSchemaParameters(WEATHER_SCHEMA),
    handler: async (args) => {
        state.toolExecutions += 1;
        trace(`tool get_weather executed with ${JSON.stringify(args)} (execution ${state.toolExecutions})`);
        return weatherResult(args?.city);
    },
};

// ---- one turn's checks ----------------------------------------------------
/** The messages a turn added (after its user message) must hold the round trip. */
function checkTurn(turn, added) {
    const calls = toolCallsOf(added).filter((tc) => tc.name === "get_weather");
    if (calls.length === 0) return `turn ${turn}: the agent did not call get_weather`;
    for (const call of calls) {
        const result = added.find((m) => m.role === "tool" && m.toolCallId === call.id);
        if (!result) return `turn ${turn}: no tool message answers tool call ${call.id}`;
        let city;
        try {
            city = JSON.parse(call.arguments)?.city;
        } catch {
            return `turn ${turn}: tool call ${call.id} has arguments that are not JSON: ${call.arguments}`;
        }
        const expected = weatherResult(city);
        if (result.content !== expected)
            return `turn ${turn}: tool message for ${call.id} is ${JSON.stringify(result.content)}, expected ${expected}`;
        const resultIndex = added.indexOf(result);
        const answer = added
            .slice(resultIndex + 1)
            .find((m) => m.role === "assistant" && typeof m.content === "string" && m.content.includes(expected));
        if (!answer) return `turn ${turn}: no assistant text after the tool result contains ${expected}`;
    }
    const last = added[added.length - 1];
    if (!(last?.role === "assistant" && typeof last.content === "string" && last.content.length > 0))
        return `turn ${turn}: the turn does not end with an assistant text message (last: ${JSON.stringify(last)})`;
    return null;
}

// ---- main -----------------------------------------------------------------
async function main() {
    const aguiUrl = opts.selfTest ? await startFake() : opts.aguiUrl;
    trace(`AG-UI endpoint ${aguiUrl}`);

    const { CopilotRuntime } = await import("@copilotkit/runtime/v2");
    const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");
    const { HttpAgent } = await import("@ag-ui/client");
    const { CopilotKitCore } = await import("@copilotkit/core");

    // Every request the runtime sends upstream is one agent run; count them
    // here (the HttpAgent's fetch carries over to the per-request clones).
    const upstreamFetch = async (url, init) => {
        if (state.runs >= MAX_RUNS) {
            // Not sent: `runs` stays at the limit and the report fails.
            const why = `the runtime asked for agent run ${state.runs + 1}, over the limit of ${MAX_RUNS} (does the agent keep calling the tool?)`;
            finish(why);
            throw new Error(why);
        }
        state.runs += 1;
        const body = typeof init?.body === "string" ? init.body : "";
        state.upstreamInputs.push(body);
        trace(`runtime -> AG-UI run ${state.runs}: POST ${url} RunAgentInput ${body}`);
        return fetch(url, init);
    };

    const runtime = new CopilotRuntime({
        agents: { default: new HttpAgent({ url: aguiUrl, fetch: upstreamFetch }) },
    });
    const listener = createCopilotNodeListener({
        runtime,
        basePath: "/api/copilotkit",
        activateChannels: false,
    });
    server = http.createServer((req, res) => {
        const entry = `${req.method} ${req.url}`;
        res.on("finish", () => {
            state.runtimeRequests.push(`${entry} -> ${res.statusCode}`);
            trace(`client -> runtime: ${entry} -> ${res.statusCode}`);
        });
        listener(req, res).catch((e) => finish(`runtime listener failed: ${e?.stack ?? e}`));
    });
    await new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", resolve);
    });
    const runtimeUrl = `http://127.0.0.1:${server.address().port}/api/copilotkit`;
    trace(`runtime listening at ${runtimeUrl}`);

    const copilotkit = new CopilotKitCore({ runtimeUrl, tools: [getWeatherTool] });
    copilotkit.subscribe({
        onError: ({ error, code }) => {
            state.runErrors.push(`${code}: ${error?.message ?? error}`);
            trace(`CopilotKitCore error ${code}: ${error?.message ?? error}`);
        },
    });
    ({ agent } = copilotkit.registerProxiedAgent({ agentId: "default", runtimeAgentId: "default" }));
    agent.threadId = randomUUID();
    agent.subscribe({
        onRunStartedEvent: ({ event }) => {
            state.clientRunsStarted += 1;
            trace(`client saw RUN_STARTED runId=${event.runId}`);
        },
        onRunFinishedEvent: ({ event }) => {
            state.clientRunsFinished += 1;
            trace(`client saw RUN_FINISHED runId=${event.runId}`);
        },
        onToolCallStartEvent: ({ event }) => {
            const seen = state.streamToolCallIds.includes(event.toolCallId);
            state.streamToolCallIds.push(event.toolCallId);
            trace(`client saw TOOL_CALL_START ${event.toolCallName} id=${event.toolCallId}`);
            if (seen) state.runErrors.push(`TOOL_CALL_START reuses the tool-call id ${event.toolCallId} of an earlier call`);
        },
        onRunErrorEvent: ({ event }) => {
            state.runErrors.push(`RUN_ERROR: ${event.message}`);
        },
        onRunFailed: ({ error }) => {
            state.runErrors.push(`run failed: ${error?.message ?? error}`);
        },
    });

    // What <CopilotChat> does on mount.
    await copilotkit.connectAgent({ agent });

    for (let turn = 1; turn <= TURNS; turn++) {
        const userMessage = { id: randomUUID(), role: "user", content: USER_TEXT };
        agent.addMessage(userMessage);
        const runsBefore = state.runs;
        await copilotkit.runAgent({ agent });
        trace(`turn ${turn}: ${state.runs - runsBefore} agent runs`);
        if (state.runErrors.length > 0) return finish(`turn ${turn}: run error: ${state.runErrors.join("; ")}`);
        const from = agent.messages.findIndex((m) => m.id === userMessage.id);
        if (from === -1) return finish(`turn ${turn}: the user message is gone from the thread`);
        const problem = checkTurn(turn, agent.messages.slice(from + 1));
        if (problem) return finish(problem);
        state.turnsCompleted += 1;
    }
    finish(null);
}

main().catch((e) => finish(`harness failed: ${e?.stack ?? e}`));
