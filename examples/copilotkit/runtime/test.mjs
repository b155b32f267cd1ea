#!/usr/bin/env node
// The CopilotKit example, end to end:
//
//   node test.mjs [--gateway-bin PATH] [--timeout-ms N] [--verbose]
//
// 1. `agui-gateway demo` on a free loopback port; server.mjs (the CopilotKit
//    runtime) in front of it; client.mjs (CopilotKitCore) asks two questions
//    in one thread. The output must hold the demo agent's answers, streamed
//    in several chunks, its reasoning, its tool call with the result, and the
//    CUSTOM events a2a.trajectory, a2a.citation, a2a.commands, a2a.status;
//    every run finished.
// 2. A second gateway from a configuration file, in front of the same demo
//    agent: two named agents (`assistant`, `weather`), API keys on, and
//    `weather` allowed to one key only. server.mjs with that key in
//    AGUI_GATEWAY_TOKEN serves both agents; without a token the gateway
//    answers 401 AUTH_REQUIRED, with another key 403 AUTH_FORBIDDEN, and the
//    client reports the run as failed.
//
// Loopback only, every wait bounded (--timeout-ms, default 120000, for it
// all). Prints one line per check (`ok` / `FAIL`) and a summary; exits 0 when
// every check passed.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../../..");

const opts = {
    gatewayBin: process.env.AGUI_GATEWAY_BIN ?? path.join(ROOT, "target/debug/agui-gateway"),
    timeoutMs: 120000,
    verbose: false,
};
{
    const argv = process.argv.slice(2);
    const usage = (message) => {
        console.error(`copilotkit test: ${message}`);
        console.error("usage: node test.mjs [--gateway-bin PATH] [--timeout-ms N] [--verbose]");
        process.exit(2);
    };
    for (let i = 0; i < argv.length; i++) {
        const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${argv[i]} needs a value`));
        switch (argv[i]) {
            case "--gateway-bin":
                opts.gatewayBin = path.resolve(value());
                break;
            case "--timeout-ms":
                opts.timeoutMs = Number(value());
                break;
            case "--verbose":
                opts.verbose = true;
                break;
            default:
                usage(`unknown argument ${argv[i]}`);
        }
    }
}
const trace = (msg) => opts.verbose && console.error(`copilotkit test: ${msg}`);

// The demo agent's answer (crates/agui-gateway/src/demo.rs) for a city.
const answer = (city) => `It is sunny in ${city}, 22 °C, with a light breeze.`;
const KEY = "example-secret-1"; // the runtime's key for the second gateway
const OTHER_KEY = "example-secret-2"; // a key `weather` does not allow

// ---- reporting and cleanup ------------------------------------------------
let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
    if (ok) passed += 1;
    else failed += 1;
    console.log(`${ok ? "ok  " : "FAIL"} ${name}${!ok && detail ? `: ${detail}` : ""}`);
    return ok;
}
const children = [];
const scratch = mkdtempSync(path.join(os.tmpdir(), "agui-copilotkit-example-"));
let done = false;
function finish(error) {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (error) check("the test ran to its end", false, error?.stack ?? String(error));
    for (const child of children) {
        try {
            child.kill("SIGKILL");
        } catch {}
    }
    rmSync(scratch, { recursive: true, force: true });
    console.log(`copilotkit example: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
const timer = setTimeout(() => finish(new Error(`timed out after ${opts.timeoutMs} ms`)), opts.timeoutMs);
process.on("unhandledRejection", (e) => finish(e));
process.on("uncaughtException", (e) => finish(e));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => finish(new Error(`got ${signal}`)));

// ---- processes ------------------------------------------------------------
function freePort() {
    return new Promise((resolve, reject) => {
        const probe = net.createServer();
        probe.once("error", reject);
        probe.listen(0, "127.0.0.1", () => {
            const { port } = probe.address();
            probe.close(() => resolve(port));
        });
    });
}

/** Starts a long-running process; resolves once `ready` matches its output (bounded). */
function startProcess(label, command, args, { env = {}, ready, waitMs = 20000 } = {}) {
    trace(`starting ${label}: ${command} ${args.join(" ")}`);
    // The environment of this test, less anything that would turn the
    // gateway's authentication on where the test does not ask for it.
    const base = { ...process.env };
    delete base.AGUI_GATEWAY_API_KEYS;
    delete base.AGUI_GATEWAY_TOKEN;
    const child = spawn(command, args, {
        cwd: HERE,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...base, AGUI_GATEWAY_LOG: process.env.AGUI_GATEWAY_LOG ?? "warn", ...env },
    });
    children.push(child);
    let output = "";
    return new Promise((resolve, reject) => {
        const timeout = setTimeout(() => reject(new Error(`${label} not ready within ${waitMs} ms:\n${output}`)), waitMs);
        const onData = (chunk) => {
            output += chunk;
            if (opts.verbose) process.stderr.write(`[${label}] ${chunk}`);
            const match = ready.exec(output);
            if (match) {
                clearTimeout(timeout);
                resolve(match);
            }
        };
        child.stdout.on("data", onData);
        child.stderr.on("data", onData);
        child.on("error", (e) => reject(new Error(`${label} could not start: ${e.message}`)));
        child.on("exit", (code, signal) => {
            clearTimeout(timeout);
            reject(new Error(`${label} exited (${code ?? signal}):\n${output}`));
        });
    });
}

/** Runs client.mjs --json to its end (bounded); its conversation, report and exit code. */
function runClient(runtimeUrl, agent, messages) {
    const args = [path.join(HERE, "client.mjs"), "--runtime", runtimeUrl, "--agent", agent, "--timeout-ms", "30000", "--json", ...messages];
    trace(`client: node ${args.join(" ")}`);
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, args, { cwd: HERE, stdio: ["ignore", "pipe", "pipe"] });
        children.push(child);
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d) => (stderr += d));
        const timeout = setTimeout(() => {
            child.kill("SIGKILL");
            reject(new Error(`client.mjs did not end within 45 s:\n${stdout}\n${stderr}`));
        }, 45000);
        child.on("exit", (code) => {
            clearTimeout(timeout);
            const lines = stdout.trimEnd().split("\n");
            let report = null;
            try {
                report = JSON.parse(lines[lines.length - 1]);
            } catch {}
            const conversation = lines.slice(0, -1).join("\n");
            if (opts.verbose) process.stderr.write(`[client ${agent}] exit ${code}\n${conversation}\n${stderr}`);
            resolve({ code, conversation, report, stderr });
        });
    });
}

async function startRuntime(label, gatewayUrl, agents, token) {
    const [, url] = await startProcess(label, process.execPath, [path.join(HERE, "server.mjs")], {
        env: { AGUI_GATEWAY_URL: gatewayUrl, COPILOTKIT_AGENTS: agents, PORT: "0", ...(token ? { AGUI_GATEWAY_TOKEN: token } : {}) },
        ready: /runtime listening on (\S+)/,
    });
    return url;
}

// ---- the test -------------------------------------------------------------
async function main() {
    // The demo, and the demo agent's own address (from its banner) for the
    // second gateway.
    const demoPort = await freePort();
    const [, agentUrl] = await startProcess("demo", opts.gatewayBin, ["demo", "--listen", `127.0.0.1:${demoPort}`, "--delay-ms", "60"], {
        ready: /demo A2A agent[^\n]*? on (http:\/\/127\.0\.0\.1:\d+\/)/,
    });
    const demoUrl = `http://127.0.0.1:${demoPort}`;

    const securePort = await freePort();
    const config = path.join(scratch, "gateway.toml");
    writeFileSync(
        config,
        [
            `listen = "127.0.0.1:${securePort}"`,
            `default_agent = "assistant"`,
            ``,
            `[auth]`,
            `api_keys_env = "EXAMPLE_GATEWAY_KEYS"`,
            ``,
            `[agents.assistant]`,
            `upstream = "${agentUrl}"`,
            ``,
            `[agents.weather]`,
            `upstream = "${agentUrl}"`,
            `allow = ["key:copilot-runtime"]`,
            ``,
        ].join("\n"),
    );
    await startProcess("secure gateway", opts.gatewayBin, ["--config", config], {
        env: { EXAMPLE_GATEWAY_KEYS: `copilot-runtime:${KEY},viewer:${OTHER_KEY}` },
        ready: /listening on http:\/\/127\.0\.0\.1:\d+/,
    });
    const secureUrl = `http://127.0.0.1:${securePort}`;

    const [demoRuntime, keyedRuntime, anonymousRuntime, viewerRuntime] = await Promise.all([
        startRuntime("runtime (demo)", demoUrl, "assistant"),
        startRuntime("runtime (key)", secureUrl, "assistant,weather", KEY),
        startRuntime("runtime (no key)", secureUrl, "weather"),
        startRuntime("runtime (other key)", secureUrl, "weather", OTHER_KEY),
    ]);

    // -- 1. the demo, two turns in one thread ---------------------------------
    {
        const { code, conversation, report } = await runClient(demoRuntime, "assistant", ["Weather in Tokyo?", "And in Oslo?"]);
        check("demo: the client exited 0 with a report", code === 0 && report?.ok === true, `exit ${code}, ${JSON.stringify(report?.errors)}`);
        const turns = report?.turns ?? [];
        check("demo: both turns' runs finished (RUN_FINISHED, task completed)",
            turns.length === 2 && turns.every((t) => t.finished && t.taskState === "completed") && report.eventCounts?.RUN_FINISHED === 2,
            JSON.stringify(turns.map((t) => [t.finished, t.taskState])));
        check("demo: the answers are the demo agent's",
            turns[0]?.text === answer("Tokyo") && turns[1]?.text === answer("Oslo"), JSON.stringify(turns.map((t) => t.text)));
        check("demo: the conversation printed them",
            conversation.includes(`you: Weather in Tokyo?\n`) && conversation.includes(`assistant: ${answer("Tokyo")}\n`) && conversation.includes(`assistant: ${answer("Oslo")}\n`),
            conversation);
        check("demo: each answer came in more than one TEXT_MESSAGE_CONTENT", turns.every((t) => t.textChunks > 1), JSON.stringify(turns.map((t) => t.textChunks)));
        check("demo: reasoning came through", turns[0]?.reasoning.includes("I will call the weather tool."), turns[0]?.reasoning);
        const call = turns[0]?.toolCalls?.[0];
        check("demo: the agent's tool call came through with its result",
            call?.name === "get_weather" && call.args?.city === "Tokyo" && call.result === "sunny, 22 °C", JSON.stringify(call));
        const customs = new Set(report?.custom ?? []);
        check("demo: the CUSTOM events a2a.trajectory, a2a.citation, a2a.commands and a2a.status came through",
            ["a2a.trajectory", "a2a.citation", "a2a.commands", "a2a.status"].every((n) => customs.has(n)), JSON.stringify([...customs]));
        check("demo: the client command is SHOW_WEATHER_CARD for the city asked about",
            turns[1]?.commands?.[0]?.name === "SHOW_WEATHER_CARD" && turns[1].commands[0].params?.city === "Oslo", JSON.stringify(turns[1]?.commands));
        check("demo: no run error", (report?.errors ?? []).length === 0 && !report?.eventCounts?.RUN_ERROR, JSON.stringify(report?.errors));
    }

    // -- 2. named agents and the gateway's API keys ------------------------------
    {
        const [weather, assistant] = await Promise.all([
            runClient(keyedRuntime, "weather", ["Weather in Lima?"]),
            runClient(keyedRuntime, "assistant", ["Weather in Rome?"]),
        ]);
        check("named agents: `weather` (/v1/agents/weather/agui, key allowed) answered",
            weather.code === 0 && weather.report?.turns?.[0]?.text === answer("Lima"), `${weather.code} ${JSON.stringify(weather.report?.errors)}`);
        check("named agents: `assistant` (/v1/agents/assistant/agui) answered in the same runtime",
            assistant.code === 0 && assistant.report?.turns?.[0]?.text === answer("Rome"), `${assistant.code} ${JSON.stringify(assistant.report?.errors)}`);

        const anonymous = await runClient(anonymousRuntime, "weather", ["Weather in Lima?"]);
        check("auth: without AGUI_GATEWAY_TOKEN the gateway answers 401 AUTH_REQUIRED and the run fails",
            anonymous.code === 1 && (anonymous.report?.errors ?? []).some((e) => e.includes("401") && e.includes("AUTH_REQUIRED")) && !anonymous.report?.turns?.[0]?.text,
            JSON.stringify(anonymous.report?.errors));
        const viewer = await runClient(viewerRuntime, "weather", ["Weather in Lima?"]);
        check("auth: a key the agent does not allow gets 403 AUTH_FORBIDDEN and the run fails",
            viewer.code === 1 && (viewer.report?.errors ?? []).some((e) => e.includes("403") && e.includes("AUTH_FORBIDDEN")),
            JSON.stringify(viewer.report?.errors));
    }
}

main().then(() => finish(), finish);
