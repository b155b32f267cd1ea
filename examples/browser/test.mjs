#!/usr/bin/env node
// The browser example, end to end in headless Chromium:
//
//   node test.mjs [--gateway-bin PATH] [--chromium PATH] [--screenshot FILE] [--timeout-ms N] [--verbose]
//
// 1. bundles app.js with @ag-ui/client 1.0.0 (esbuild) into dist/;
// 2. starts `agui-gateway demo --listen 127.0.0.1:<G> --cors-origin
//    http://localhost:<P> --cors-credentials` and serves the page on
//    127.0.0.1:<P>, so the page (origin http://localhost:<P>) and the gateway
//    (http://127.0.0.1:<G>) are different origins: every request is CORS;
// 3. in Chromium, from http://localhost:<P>: types a question, sends it and
//    checks in the DOM that the run finished with the demo agent's answer,
//    streamed (the bubble showed partial text before the end), with its
//    reasoning, tool call, trajectory, citation and client command rendered,
//    and that the request went in credentials mode `include` (the page's
//    RequestInit, the gateway's Access-Control-Allow-Credentials: true);
// 4. from http://127.0.0.1:<P>, an origin the gateway does not allow: the
//    same page must fail (the browser refuses the answer), with nothing
//    rendered;
// 5. against a second gateway without --cors-credentials: the page in mode
//    `include` must fail, and the same page in mode `same-origin` must work,
//    which shows the credentials mode is what the first run used.
//
// Loopback only; every wait is bounded (--timeout-ms, default 90000, for it
// all). Prints one line per check (`ok` / `FAIL`), then a summary; exits 0
// when every check passed, 1 otherwise.

import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

import { buildApp } from "./build.mjs";
import { serve } from "./serve.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");

const opts = {
    gatewayBin: process.env.AGUI_GATEWAY_BIN ?? path.join(ROOT, "target/debug/agui-gateway"),
    chromium: process.env.CHROMIUM ?? "/usr/bin/chromium",
    screenshot: path.join(HERE, "dist", "browser-example.png"),
    timeoutMs: 90000,
    verbose: false,
};
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        const value = () => {
            if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
            return argv[++i];
        };
        switch (argv[i]) {
            case "--gateway-bin":
                opts.gatewayBin = path.resolve(value());
                break;
            case "--chromium":
                opts.chromium = value();
                break;
            case "--screenshot":
                opts.screenshot = path.resolve(value());
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
function usage(message) {
    console.error(`browser test: ${message}`);
    console.error("usage: node test.mjs [--gateway-bin PATH] [--chromium PATH] [--screenshot FILE] [--timeout-ms N] [--verbose]");
    process.exit(2);
}

// The demo agent's answer to "Weather in Tokyo?" (crates/agui-gateway/src/demo.rs).
const QUESTION = "Weather in Tokyo?";
const ANSWER = "It is sunny in Tokyo, 22 °C, with a light breeze.";
const CITED = "It is sunny in Tokyo";
const RUN_WAIT_MS = 20000;
// Between the demo agent's events: wide enough that each text chunk reaches
// the page on its own, even on a busy machine (about 2.5 s per run).
const DELAY_MS = 100;

// ---- reporting and cleanup ------------------------------------------------
let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
    if (ok) passed += 1;
    else failed += 1;
    console.log(`${ok ? "ok  " : "FAIL"} ${name}${!ok && detail ? `: ${detail}` : ""}`);
    return ok;
}
const trace = (msg) => opts.verbose && console.error(`browser test: ${msg}`);

const children = [];
const servers = [];
let browser = null;
let done = false;
async function finish(error) {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (error) check("the test ran to its end", false, error?.stack ?? String(error));
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
    console.log(`browser example: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
const timer = setTimeout(() => finish(new Error(`timed out after ${opts.timeoutMs} ms`)), opts.timeoutMs);
process.on("unhandledRejection", (e) => finish(e));
process.on("uncaughtException", (e) => finish(e));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => finish(new Error(`got ${signal}`)));

// ---- helpers --------------------------------------------------------------
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

/** `agui-gateway demo` on a free loopback port; resolves with its base URL once /healthz answers. */
async function startGateway(extraArgs) {
    const port = await freePort();
    const args = ["demo", "--listen", `127.0.0.1:${port}`, "--delay-ms", String(DELAY_MS), ...extraArgs];
    trace(`starting ${opts.gatewayBin} ${args.join(" ")}`);
    const child = spawn(opts.gatewayBin, args, {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, AGUI_GATEWAY_LOG: process.env.AGUI_GATEWAY_LOG ?? "warn" },
    });
    children.push(child);
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    let exited = null;
    child.on("exit", (code, signal) => (exited = `exited (${code ?? signal})`));
    child.on("error", (e) => (exited = `could not start: ${e.message}`));
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline) {
        if (exited) throw new Error(`agui-gateway ${exited}:\n${output}`);
        try {
            const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) });
            if (res.ok) return base;
        } catch {}
        await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`agui-gateway did not answer /healthz within 15 s:\n${output}`);
}

/** A page with what the test watches: AG-UI responses, console errors and the bubble's text over time. */
async function openPage(context, url) {
    const page = await context.newPage();
    const seen = { aguiResponses: [], aguiRequests: [], failedRequests: [], console: [] };
    page.on("request", (req) => {
        if (req.url().endsWith("/agui")) seen.aguiRequests.push(req);
    });
    page.on("response", (res) => {
        if (res.url().endsWith("/agui") && res.request().method() === "POST") seen.aguiResponses.push(res);
    });
    page.on("requestfailed", (req) => seen.failedRequests.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
    page.on("console", (msg) => {
        seen.console.push(`${msg.type()}: ${msg.text()}`);
        trace(`console ${msg.type()}: ${msg.text()}`);
    });
    page.on("pageerror", (e) => seen.console.push(`pageerror: ${e.message}`));
    // Every text the assistant bubble showed, with the run state at the time.
    await page.addInitScript(() => {
        window.__bubbleTexts = [];
        new MutationObserver(() => {
            const bubble = document.querySelector(".bubble.assistant");
            const state = document.querySelector("#run-state")?.dataset.state;
            // The answer's own text, without the citation numbers the page adds.
            const copy = bubble?.cloneNode(true);
            for (const sup of copy?.querySelectorAll("sup") ?? []) sup.remove();
            const text = copy?.textContent ?? "";
            const last = window.__bubbleTexts[window.__bubbleTexts.length - 1];
            if (text && (!last || last.text !== text)) window.__bubbleTexts.push({ text, state });
        }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await page.goto(url, { waitUntil: "load", timeout: 15000 });
    await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
    return { page, seen };
}

/** Types the question, sends it and waits (bounded) for the run to end; returns the final state. */
async function ask(page, question) {
    await page.fill("#prompt", question);
    await page.click("#send");
    await page.waitForSelector("#run-state[data-state=finished], #run-state[data-state=failed]", { timeout: RUN_WAIT_MS });
    return page.$eval("#run-state", (el) => el.dataset.state);
}

const text = (page, selector) => page.$eval(selector, (el) => el.textContent).catch(() => null);
// The answer's own text: the bubble less the citation numbers the page adds.
const answerText = (page) =>
    page
        .$eval(".bubble.assistant", (el) => {
            const copy = el.cloneNode(true);
            for (const sup of copy.querySelectorAll("sup")) sup.remove();
            return copy.textContent;
        })
        .catch(() => null);
const count = (page, type) =>
    page.$eval(`#event-counts tr[data-type="${type}"]`, (el) => Number(el.dataset.count)).catch(() => 0);

// ---- the test -------------------------------------------------------------
async function main() {
    const built = await buildApp();
    // A bundle without the client would be a few KiB: the page's own code.
    check(`bundled app.js with @ag-ui/client into dist/ (${Math.round(built.bytes / 1024)} KiB with source map)`, built.bytes > 50_000);

    const pagePort = await freePort();
    servers.push(await serve({ port: pagePort, host: "127.0.0.1" }));
    const allowedOrigin = `http://localhost:${pagePort}`;
    const refusedOrigin = `http://127.0.0.1:${pagePort}`;

    const gateway = await startGateway(["--cors-origin", allowedOrigin, "--cors-credentials"]);
    const noCredentialsGateway = await startGateway(["--cors-origin", allowedOrigin]);
    trace(`page ${allowedOrigin}, gateway ${gateway}, gateway without credentials ${noCredentialsGateway}`);

    browser = await chromium.launch({
        executablePath: opts.chromium,
        headless: true,
        args: [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
        timeout: 30000,
    });
    trace(`chromium ${browser.version()}`);
    const context = await browser.newContext({ viewport: { width: 1120, height: 720 } });

    // -- 1. the allowed origin, credentials included --------------------------
    {
        const { page, seen } = await openPage(context, `${allowedOrigin}/?gateway=${encodeURIComponent(gateway)}`);
        const state = await ask(page, QUESTION);
        const error = await page.$eval("#error", (el) => (el.hidden ? null : el.textContent));
        check("allowed origin: the run finished (RUN_FINISHED rendered, no error)", state === "finished" && error === null, `state ${state}, error ${error}`);
        check("allowed origin: exactly one RUN_STARTED and one RUN_FINISHED, no RUN_ERROR",
            (await count(page, "RUN_STARTED")) === 1 && (await count(page, "RUN_FINISHED")) === 1 && (await count(page, "RUN_ERROR")) === 0);
        const bubble = await answerText(page);
        check("allowed origin: the assistant's answer is on the page", bubble === ANSWER, `bubble ${JSON.stringify(bubble)}`);

        const chunks = await page.$eval(".bubble.assistant", (el) => Number(el.dataset.chunks));
        const contents = await count(page, "TEXT_MESSAGE_CONTENT");
        check("allowed origin: the text came in more than one TEXT_MESSAGE_CONTENT", chunks > 1 && contents === chunks, `${chunks} rendered, ${contents} counted`);
        const snapshots = await page.evaluate(() => window.__bubbleTexts);
        const partial = snapshots.filter((s) => s.state === "running" && s.text !== ANSWER && ANSWER.startsWith(s.text));
        check("allowed origin: the bubble showed partial text while the run was still going (incremental rendering)",
            new Set(partial.map((s) => s.text)).size >= 2, JSON.stringify(snapshots));

        const reasoning = await text(page, ".card.reasoning");
        check("allowed origin: reasoning rendered", reasoning?.includes("I will call the weather tool."), reasoning);
        const tool = await text(page, ".card.tool");
        check("allowed origin: the tool call and its result rendered",
            tool?.includes("get_weather") && tool.includes('{"city":"Tokyo"}') && tool.includes("sunny, 22 °C"), tool);
        const trajectory = await text(page, ".card.trajectory");
        check("allowed origin: CUSTOM a2a.trajectory rendered", trajectory?.includes("Planning") && trajectory.includes("Look up the weather"), trajectory);
        const mark = await text(page, ".bubble.assistant mark");
        const sources = await text(page, ".card.sources");
        check("allowed origin: CUSTOM a2a.citation rendered (the cited span marked, the source listed)",
            mark === CITED && sources?.includes("Weather service"), `mark ${JSON.stringify(mark)}, sources ${JSON.stringify(sources)}`);
        const command = await text(page, '.card.command[data-command="SHOW_WEATHER_CARD"]');
        check("allowed origin: CUSTOM a2a.commands rendered (SHOW_WEATHER_CARD for Tokyo)", command?.includes("Tokyo"), command);
        const taskState = await page.$eval("#task-state", (el) => el.dataset.state);
        check("allowed origin: CUSTOM a2a.status rendered (task completed)", taskState === "completed", taskState);

        const mode = await page.$eval("#request-info", (el) => el.dataset.credentials);
        check("allowed origin: the page sent its request with credentials: 'include'", mode === "include", mode);
        const response = seen.aguiResponses[0];
        const headers = response ? await response.allHeaders() : {};
        check("allowed origin: the gateway answered 200 with Access-Control-Allow-Credentials: true for this origin",
            response?.status() === 200 && headers["access-control-allow-credentials"] === "true" && headers["access-control-allow-origin"] === allowedOrigin,
            JSON.stringify({ status: response?.status(), headers }));
        const post = seen.aguiRequests.find((r) => r.method() === "POST");
        const origin = post ? (await post.allHeaders())["origin"] : undefined;
        check("allowed origin: the request was cross-origin (Origin header sent)", origin === allowedOrigin, origin);

        await page.evaluate(() => document.activeElement?.blur());
        mkdirSync(path.dirname(opts.screenshot), { recursive: true });
        await page.screenshot({ path: opts.screenshot, fullPage: true });
        console.log(`     screenshot: ${path.relative(process.cwd(), opts.screenshot)}`);
        await page.close();
    }

    // -- 2. an origin the gateway does not allow -------------------------------
    {
        const { page, seen } = await openPage(context, `${refusedOrigin}/?gateway=${encodeURIComponent(gateway)}`);
        const state = await ask(page, QUESTION);
        const error = await page.$eval("#error", (el) => (el.hidden ? null : el.textContent));
        check("refused origin: the run failed (the browser refused the gateway's answer)", state === "failed" && error?.includes("failed"), `state ${state}, error ${error}`);
        check("refused origin: no AG-UI event reached the page", (await count(page, "RUN_STARTED")) === 0 && (await page.$(".bubble.assistant")) === null);
        const cors = seen.console.some((line) => /CORS/i.test(line)) || seen.failedRequests.some((line) => /CORS|ERR_FAILED/i.test(line));
        check("refused origin: Chromium reports it as a CORS refusal", cors, JSON.stringify({ console: seen.console, failed: seen.failedRequests }));
        await page.close();
    }

    // -- 3. a gateway that does not allow credentials ----------------------------
    {
        const url = `${allowedOrigin}/?gateway=${encodeURIComponent(noCredentialsGateway)}`;
        const { page, seen } = await openPage(context, url);
        const state = await ask(page, QUESTION);
        check("without --cors-credentials: the page in credentials mode 'include' fails", state === "failed", state);
        const why = seen.console.find((line) => line.includes("credentials mode is 'include'"));
        check("without --cors-credentials: Chromium says why: the request's credentials mode is 'include'", why !== undefined, JSON.stringify(seen.console));
        await page.close();

        const { page: plain } = await openPage(context, `${url}&credentials=same-origin`);
        const plainState = await ask(plain, QUESTION);
        const bubble = await answerText(plain);
        check("without --cors-credentials: the same page in mode 'same-origin' works", plainState === "finished" && bubble === ANSWER, `${plainState}, ${bubble}`);
        await plain.close();
    }
}

main().then(() => finish(), finish);
