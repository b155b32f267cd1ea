#!/usr/bin/env node
// The CopilotKit page, end to end in headless Chromium, with no CopilotKit
// runtime anywhere:
//
//   node test.mjs [--gateway-bin PATH] [--chromium PATH] [--redis-server PATH]
//                 [--screenshot FILE] [--timeout-ms N] [--verbose]
//
// 1. bundles app.jsx (@copilotkit/react-core 1.74.0, React 19) with esbuild;
// 2. starts a Redis (redis-server on a free loopback port, nothing saved),
//    `agui-gateway demo` for its demo agent, and two gateway replicas A and
//    B in front of that agent sharing the Redis journal; serves the page on
//    127.0.0.1:<P> and opens it as http://localhost:<P>, another origin than
//    the gateways', so every call is CORS;
// 3. in Chromium, against A: two questions, each a frontend tool round trip
//    (the agent calls the page's get_weather, CopilotKit runs it and sends
//    the result back); the conversation in the DOM, in order;
// 4. a reload: the same conversation, once, from A's /copilotkit connect,
//    and the tool not run again;
// 5. the same page against replica B (the single-route transport): B never
//    saw the thread, the shared journal has it: the same conversation;
// 6. no page error, no console error, no failed request.
//
// Loopback only; every wait is bounded (--timeout-ms, default 120000, for it
// all). Prints one line per check (`ok` / `FAIL`), then a summary; exits 0
// when every check passed, 1 otherwise.

import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

import { buildPage } from "./build.mjs";
import { serve } from "./serve.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");

const opts = {
    gatewayBin: process.env.AGUI_GATEWAY_BIN ?? path.join(ROOT, "target/debug/agui-gateway"),
    chromium: process.env.CHROMIUM ?? "/usr/bin/chromium",
    redisServer: process.env.REDIS_SERVER ?? "redis-server",
    screenshot: path.join(HERE, "dist", "copilotkit-example.png"),
    timeoutMs: 120000,
    verbose: false,
};
{
    const argv = process.argv.slice(2);
    const flags = {
        "--gateway-bin": "gatewayBin", "--chromium": "chromium", "--redis-server": "redisServer",
        "--screenshot": "screenshot", "--timeout-ms": "timeoutMs",
    };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === "--verbose") {
            opts.verbose = true;
            continue;
        }
        const key = flags[argv[i]];
        if (!key || i + 1 >= argv.length) {
            console.error(`copilotkit test: unknown or incomplete argument ${argv[i]}`);
            console.error("usage: node test.mjs [--gateway-bin PATH] [--chromium PATH] [--redis-server PATH] [--screenshot FILE] [--timeout-ms N] [--verbose]");
            process.exit(2);
        }
        const value = argv[++i];
        opts[key] = key === "timeoutMs" ? Number(value) : key === "redisServer" || key === "chromium" ? value : path.resolve(value);
    }
}

// The demo agent calls the client's get_weather tool for a weather question
// and answers with what the tool said (crates/agui-gateway/src/cli/demo_agent.rs).
const TURNS = [
    { question: "Weather in Tokyo?", city: "Tokyo" },
    { question: "And in Oslo?", city: "Oslo" },
];
const toolSays = (city) => `{"temperature":21,"city":"${city}"}`;
const CONVERSATION = TURNS.flatMap(({ question, city }) => [
    `user: ${question}`,
    `assistant: Asking your get_weather tool about ${city}.`,
    `assistant: Your tool says: ${toolSays(city)}`,
]);
const LAST_ANSWER = `Your tool says: ${toolSays(TURNS[TURNS.length - 1].city)}`;
const WAIT_MS = 20000;

// ---- reporting and cleanup ------------------------------------------------
let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
    if (ok) passed += 1;
    else failed += 1;
    console.log(`${ok ? "ok  " : "FAIL"} ${name}${!ok && detail ? `: ${detail}` : ""}`);
    return ok;
}
function same(name, actual, expected) {
    const ok = JSON.stringify(actual) === JSON.stringify(expected);
    return check(name, ok, `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}
const trace = (msg) => opts.verbose && console.error(`copilotkit test: ${msg}`);

const children = [];
const servers = [];
let browser = null;
let page = null;
let done = false;
async function finish(error) {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (error) {
        check("the test ran to its end", false, error?.stack ?? String(error));
        // What the page showed when it went wrong.
        try {
            console.log(`the page showed: ${JSON.stringify(await shownMessages(page))}`);
            await page.screenshot({ path: opts.screenshot });
            console.log(`its screenshot: ${opts.screenshot}`);
        } catch {}
    }
    try {
        await browser?.close();
    } catch {}
    for (const child of children) {
        try {
            child.kill("SIGKILL");
        } catch {}
    }
    for (const server of servers) {
        server.closeAllConnections?.();
        server.close();
    }
    console.log(`copilotkit page: ${passed} passed, ${failed} failed`);
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

/** Starts a process and resolves with the first match of `ready` in its output (15 s at most). */
function start(label, command, args, ready) {
    trace(`starting ${label}: ${command} ${args.join(" ")}`);
    const child = spawn(command, args, {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, AGUI_GATEWAY_LOG: process.env.AGUI_GATEWAY_LOG ?? "warn" },
    });
    children.push(child);
    return new Promise((resolve, reject) => {
        let output = "";
        const timeout = setTimeout(() => reject(new Error(`${label} not ready within 15 s:\n${output}`)), 15000);
        const read = (data) => {
            output += data;
            const match = ready.exec(output);
            if (match) {
                clearTimeout(timeout);
                resolve(match);
            }
        };
        child.stdout.on("data", read);
        child.stderr.on("data", read);
        child.on("error", (e) => reject(new Error(`${label} could not start: ${e.message}`)));
        child.on("exit", (code, signal) => reject(new Error(`${label} exited (${code ?? signal}):\n${output}`)));
    });
}

async function startRedis() {
    const port = await freePort();
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    await start("redis-server", opts.redisServer, args, /Ready to accept connections/);
    return `redis://127.0.0.1:${port}/0`;
}

/** A gateway replica in front of `agent`, sharing the `journal`; its base URL. */
async function startReplica(label, agent, journal, pageOrigin) {
    const args = ["--upstream", agent, "--listen", "127.0.0.1:0", "--journal", journal, "--cors-origin", pageOrigin];
    const [, url] = await start(label, opts.gatewayBin, args, /agui-gateway listening on (http:\/\/\S+)/);
    return url;
}

// ---- the page -------------------------------------------------------------
/** "role: text" of each message CopilotChat shows, in order. */
async function shownMessages(page) {
    return page.$$eval("[data-testid=copilot-user-message], [data-testid=copilot-assistant-message]", (els) =>
        els.map((el) => {
            const role = el.dataset.testid === "copilot-user-message" ? "user" : "assistant";
            return `${role}: ${el.textContent.trim()}`;
        }),
    );
}

/** Waits until the page shows `count` messages, the last one `last`. */
async function waitForConversation(page, count, last) {
    await page.waitForFunction(
        ([count, last]) => {
            const els = document.querySelectorAll(
                "[data-testid=copilot-user-message], [data-testid=copilot-assistant-message]",
            );
            return els.length >= count && els[els.length - 1].textContent.trim() === last;
        },
        [count, last],
        { timeout: WAIT_MS },
    );
}

function watch(page, gateways) {
    const seen = { problems: [], calls: [] };
    page.on("console", (msg) => {
        trace(`console ${msg.type()}: ${msg.text()}`);
        if (msg.type() === "error") seen.problems.push(`console: ${msg.text()}`);
    });
    page.on("pageerror", (e) => seen.problems.push(`pageerror: ${e.message}`));
    page.on("requestfailed", (r) => {
        // CopilotChat connects on mount and again once the chat's agent is
        // set up, aborting the first: that abort is the page's own.
        const connect = r.url().endsWith("/connect") || r.postData()?.includes('"method":"agent/connect"');
        if (connect && r.failure()?.errorText === "net::ERR_ABORTED") return;
        seen.problems.push(`failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
    });
    page.on("response", (r) => {
        if (r.status() >= 400) seen.problems.push(`${r.status()}: ${r.request().method()} ${r.url()}`);
    });
    page.on("request", (r) => {
        const gateway = gateways.find((g) => r.url().startsWith(g.url));
        if (gateway) seen.calls.push(`${gateway.name} ${r.method()} ${r.url().slice(gateway.url.length)}`);
    });
    return seen;
}

async function main() {
    const { bytes } = await buildPage();
    check("the page bundles", bytes > 0);

    const pageServer = await serve({ port: 0, host: "127.0.0.1" });
    servers.push(pageServer);
    const pageOrigin = `http://localhost:${pageServer.address().port}`;

    const journal = await startRedis();
    const demoPort = await freePort();
    const [, agent] = await start("agui-gateway demo", opts.gatewayBin,
        ["demo", "--listen", `127.0.0.1:${demoPort}`, "--delay-ms", "5"],
        /demo A2A agent \(0\.3 JSON-RPC\) on (http:\/\/[^\s,]+)/);
    const a = await startReplica("replica A", agent, journal, pageOrigin);
    const b = await startReplica("replica B", agent, journal, pageOrigin);
    const gateways = [{ name: "A", url: a }, { name: "B", url: b }];
    trace(`page ${pageOrigin}, agent ${agent}, replicas ${a} and ${b}, journal ${journal}`);

    browser = await chromium.launch({
        executablePath: opts.chromium,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const context = await browser.newContext();
    page = await context.newPage();
    const seen = watch(page, gateways);
    const pageUrl = (gateway, more = "") => `${pageOrigin}/?runtime=${encodeURIComponent(`${gateway}/copilotkit`)}&agent=default${more}`;

    // Two questions against A, each a frontend tool round trip.
    await page.goto(pageUrl(a));
    const thread = (await page.locator("#thread").textContent()).trim();
    check("the page made a thread id", /^[0-9a-f-]{36}$/.test(thread), thread);
    for (const [i, { question, city }] of TURNS.entries()) {
        await page.getByTestId("copilot-chat-textarea").fill(question);
        await page.getByTestId("copilot-send-button").click();
        await waitForConversation(page, (i + 1) * 3, `Your tool says: ${toolSays(city)}`);
    }
    same("the conversation, live", await shownMessages(page), CONVERSATION);
    same("the page ran get_weather once per question", await page.locator("#tool-runs").textContent(), "2");
    check("the runs went through A's /copilotkit",
        seen.calls.some((c) => c === "A POST /copilotkit/agent/default/run"), seen.calls.join("; "));

    // A reload: the conversation comes back from the gateway, once.
    await page.reload();
    await waitForConversation(page, CONVERSATION.length, LAST_ANSWER);
    same("after a reload, the thread", (await page.locator("#thread").textContent()).trim(), thread);
    same("after a reload, the conversation", await shownMessages(page), CONVERSATION);
    same("after a reload, get_weather did not run again", await page.locator("#tool-runs").textContent(), "0");

    // Replica B, which never saw the thread, over the single-route envelope.
    const callsBefore = seen.calls.length;
    await page.goto(pageUrl(b, "&transport=single"));
    await waitForConversation(page, CONVERSATION.length, LAST_ANSWER);
    same("on replica B, the thread", (await page.locator("#thread").textContent()).trim(), thread);
    same("on replica B, the conversation", await shownMessages(page), CONVERSATION);
    const onB = seen.calls.slice(callsBefore);
    check("replica B served it, on its single route",
        onB.length > 0 && onB.every((c) => c === "B POST /copilotkit" || c === "B GET /copilotkit" || c.startsWith("B OPTIONS")),
        onB.join("; "));

    mkdirSync(path.dirname(opts.screenshot), { recursive: true });
    await page.screenshot({ path: opts.screenshot });
    trace(`screenshot ${opts.screenshot}`);
    same("no page error, console error, error status or failed request", seen.problems, []);
}

main().then(() => finish(null), (e) => finish(e));
