// HTTP/2 lifts the browser's six-connections-per-origin limit for long-lived
// SSE runs. Debian's headless Chromium (driven by playwright-core, no browser
// download) opens a page on http://localhost:P, another origin than the
// gateway's, whose script starts twelve AG-UI runs at once with fetch() and
// reads each answer as a stream:
//
//   - against `agui-gateway demo --tls` (https://127.0.0.1:G): every run goes
//     over HTTP/2, all on one connection, and all twelve stream at once: the
//     twelfth run's first event arrives before the first run ends;
//   - the same page against `agui-gateway demo` in clear text
//     (http://127.0.0.1:G2), where a browser speaks HTTP/1.1: at most six
//     connections, and the runs past the sixth get their first event only
//     after an earlier run finished and freed its connection.
//
// Chromium trusts the demo's self-signed certificate through its public key
// alone (--ignore-certificate-errors-spki-list), not by ignoring certificate
// errors; a browser without that pin is shown to refuse the gateway.
//
//   node test.mjs --h2 https://127.0.0.1:G --cert CERT.pem --h1 http://127.0.0.1:G2
//
// Loopback only; every wait is bounded (BROWSER_H2_TEST_TIMEOUT_MS, 120 s,
// for it all). One `ok` / `FAIL` line per check, the numbers of each half,
// then "N passed, N failed"; exits 1 on any failure.
import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { chromium } from "playwright-core";

const RUNS = 12;
// Chromium's cap on HTTP/1.1 connections to one host (per socket group).
const HTTP1_CONNECTIONS = 6;
const RUN_TIMEOUT_MS = 30_000;

const opts = { h2: null, cert: null, h1: null };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in opts) || i + 1 >= argv.length) usage(`bad argument ${argv[i]}`);
    opts[key] = argv[++i];
  }
  if (!opts.h2 || !opts.cert || !opts.h1) usage("--h2, --cert and --h1 are all needed");
}
function usage(message) {
  console.error(`browser-h2 test: ${message}`);
  console.error("usage: node test.mjs --h2 https://127.0.0.1:G --cert CERT.pem --h1 http://127.0.0.1:G2");
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed += 1;
    console.log(`ok    ${name}`);
  } else {
    failed += 1;
    console.log(`FAIL  ${name}${detail === undefined ? "" : `\n      ${typeof detail === "string" ? detail : JSON.stringify(detail)}`}`);
  }
  return ok;
}

const browsers = [];
let pageServer = null;
let finished = false;
async function finish(error) {
  if (finished) return;
  finished = true;
  clearTimeout(deadline);
  if (error) check("the test ran to its end", false, error?.stack ?? String(error));
  for (const browser of browsers) await browser.close().catch(() => {});
  pageServer?.closeAllConnections();
  pageServer?.close();
  console.log(`\nbrowser-h2: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
const totalMs = Number(process.env.BROWSER_H2_TEST_TIMEOUT_MS || 120_000);
const deadline = setTimeout(() => finish(new Error(`timed out after ${totalMs} ms`)), totalMs);
process.on("unhandledRejection", (e) => finish(e));
process.on("uncaughtException", (e) => finish(e));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => finish(new Error(`got ${signal}`)));

// ---- the page ---------------------------------------------------------------
// Its script starts n runs in one synchronous loop and reads every answer as a
// stream, noting (ms since the start) when each run's first SSE event came,
// when RUN_FINISHED came, and its last event's type.
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>twelve AG-UI runs at once</title>
<link rel="icon" href="data:,"></head>
<body><p>twelve AG-UI runs at once</p><script>
"use strict";
window.runAll = async function (base, n, tag, timeoutMs) {
  const t0 = performance.now();
  const at = () => Math.round(performance.now() - t0);
  async function run(i) {
    const threadId = tag + "-thread-" + (i + 1);
    const r = { run: i + 1, threadId, status: 0, started: at(), headers: null, first: null, firstType: null,
                finished: null, last: null, events: 0, error: null };
    try {
      const response = await fetch(base + "/agui", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ threadId, runId: tag + "-run-" + (i + 1),
          messages: [{ id: "u1", role: "user", content: "Weather in Tokyo?" }] }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      r.status = response.status;
      r.headers = at();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // Only CRLF pairs are folded: a lone CR at the end of a chunk waits
        // for its LF in the next one.
        buffer = (buffer + value).replace(/\\r\\n/g, "\\n");
        let end;
        while ((end = buffer.indexOf("\\n\\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split("\\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
          if (data.length === 0) continue; // a comment or keep-alive
          const type = JSON.parse(data.join("\\n")).type;
          const now = at();
          r.events += 1;
          if (r.first === null) { r.first = now; r.firstType = type; }
          if (type === "RUN_FINISHED") r.finished = now;
          r.last = type;
        }
      }
    } catch (e) {
      r.error = String(e);
    }
    return r;
  }
  const runs = await Promise.all(Array.from({ length: n }, (_, i) => run(i)));
  // Resource Timing's view of the same requests. A fetch's entry is added
  // once its body is complete, in a task of its own: the last one can come a
  // moment after the stream said done, so a second at most is given.
  const entries = () => performance.getEntriesByType("resource").filter((e) => e.name === base + "/agui");
  for (let waited = 0; entries().length < n && waited < 1000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  const timing = entries().map((e) => ({ nextHopProtocol: e.nextHopProtocol, initiatorType: e.initiatorType }));
  return { origin: location.origin, runs, timing };
};
document.body.dataset.ready = "true";
</script></body></html>`;

function servePage() {
  return new Promise((resolve, reject) => {
    const server = createServer((req, res) => {
      if (req.method === "GET" && (req.url === "/" || req.url.startsWith("/?"))) {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
        res.end(PAGE);
      } else {
        res.writeHead(404).end();
      }
    });
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

// ---- the browser ------------------------------------------------------------
const BASE_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
async function launch(extraArgs) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [...BASE_ARGS, ...extraArgs],
    timeout: 60_000,
  });
  browsers.push(browser);
  return browser;
}

/** Opens the page in a fresh context (no connection shared with an earlier half) and runs the twelve. */
async function twelveRuns(browser, pageUrl, base, tag) {
  const context = await browser.newContext();
  context.setDefaultTimeout(RUN_TIMEOUT_MS);
  const page = await context.newPage();
  const consoleErrors = [];
  page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
  page.on("pageerror", (e) => consoleErrors.push(e.message));

  // The protocol each request went over, from the DevTools Protocol. The
  // page's own Resource Timing does not say: a cross-origin response without
  // Timing-Allow-Origin gets opaque timing info (Fetch), whose
  // nextHopProtocol is "" (the gateway sends no such header, and a page
  // should not need one to be served over HTTP/2). playwright-core's Response
  // has no protocol either. Network.responseReceived gives response.protocol
  // ("h2", "http/1.1") and the id of the connection it came on.
  const cdp = await context.newCDPSession(page);
  const requests = new Map();
  cdp.on("Network.requestWillBeSent", (e) => {
    if (e.request.method === "POST" && e.request.url === `${base}/agui`) {
      let threadId = null;
      try {
        threadId = JSON.parse(e.request.postData ?? "null")?.threadId ?? null;
      } catch {}
      requests.set(e.requestId, { threadId, protocol: null, connectionId: null });
    }
  });
  cdp.on("Network.responseReceived", (e) => {
    const request = requests.get(e.requestId);
    if (request) {
      request.protocol = e.response.protocol;
      request.connectionId = e.response.connectionId;
    }
  });
  await cdp.send("Network.enable");

  await page.goto(pageUrl, { waitUntil: "load", timeout: 15_000 });
  await page.waitForSelector("body[data-ready=true]", { timeout: 10_000 });
  const result = await page.evaluate(([b, n, t, ms]) => window.runAll(b, n, t, ms), [base, RUNS, tag, RUN_TIMEOUT_MS]);
  const byThread = new Map([...requests.values()].map((r) => [r.threadId, r]));
  for (const run of result.runs) {
    const request = byThread.get(run.threadId);
    run.protocol = request?.protocol ?? null;
    run.connectionId = request?.connectionId ?? null;
  }
  await context.close();
  return { ...result, consoleErrors };
}

function summarize(runs) {
  const nums = (key) => runs.map((r) => r[key]).filter((v) => typeof v === "number");
  const firsts = nums("first");
  const finishes = nums("finished");
  return {
    maxFirst: firsts.length ? Math.max(...firsts) : null,
    minFinish: finishes.length ? Math.min(...finishes) : null,
    connections: new Set(runs.map((r) => r.connectionId).filter((c) => c !== null)).size,
    durations: runs.filter((r) => r.first !== null && r.finished !== null).map((r) => r.finished - r.first),
  };
}

function printRuns(runs) {
  console.log("      run  protocol  conn  started  first  finished  last event");
  for (const r of runs) {
    const cell = (v, w) => String(v ?? "-").padStart(w);
    console.log(`      ${cell(r.run, 3)}  ${String(r.protocol ?? "-").padEnd(8)}  ${cell(r.connectionId, 4)}  ${cell(r.started, 7)}  ${cell(r.first, 5)}  ${cell(r.finished, 8)}  ${r.last ?? "-"}${r.error ? `  (${r.error})` : ""}`);
  }
  console.log("      (ms since the page started the twelve)");
}

/** The checks both halves share; returns the summary. */
function common(label, result, base, expectedProtocol) {
  const { runs, origin, timing } = result;
  printRuns(runs);
  const s = summarize(runs);
  const gatewayOrigin = new URL(base).origin;
  check(`${label}: all ${RUNS} runs answered 200 to a page from another origin (${origin} -> ${gatewayOrigin})`,
    origin !== gatewayOrigin && runs.every((r) => r.status === 200 && r.error === null),
    runs.filter((r) => r.status !== 200 || r.error).map((r) => `run ${r.run}: ${r.status} ${r.error}`));
  check(`${label}: all ${RUNS} went over ${expectedProtocol} (DevTools Protocol: ${[...new Set(runs.map((r) => r.protocol))].join(", ")})`,
    runs.every((r) => r.protocol === expectedProtocol), runs.map((r) => r.protocol));
  // Shown, not checked: "" here (see twelveRuns).
  console.log(`      Resource Timing (${timing.length} entries) gives nextHopProtocol ${JSON.stringify([...new Set(timing.map((t) => t.nextHopProtocol))])}`);
  check(`${label}: all ${RUNS} ended with RUN_FINISHED (first event RUN_STARTED)`,
    runs.every((r) => r.last === "RUN_FINISHED" && r.finished !== null && r.firstType === "RUN_STARTED"),
    runs.map((r) => `${r.firstType}..${r.last}`));
  check(`${label}: no console or page error`, result.consoleErrors.length === 0, result.consoleErrors);
  console.log(`      ${s.connections} connection(s); a run streams for ${Math.min(...s.durations)}..${Math.max(...s.durations)} ms; ` +
    `last first event at ${s.maxFirst} ms, first RUN_FINISHED at ${s.minFinish} ms`);
  return s;
}

// ---- the test ---------------------------------------------------------------
async function main() {
  // The demo's certificate, trusted by its public key only: the base64 of the
  // SHA-256 of its SubjectPublicKeyInfo (DER), as the flag wants. Chromium
  // honours the flag only with --user-data-dir, which playwright-core always
  // passes (a temporary profile).
  const pem = readFileSync(opts.cert, "utf8");
  const spki = new X509Certificate(pem).publicKey.export({ type: "spki", format: "der" });
  const pin = createHash("sha256").update(spki).digest("base64");
  console.log(`certificate's SPKI pin: ${pin}`);

  pageServer = await servePage();
  // localhost, not 127.0.0.1: the page's origin differs from both gateways'.
  const pageUrl = `http://localhost:${pageServer.address().port}/`;
  const browser = await launch([`--ignore-certificate-errors-spki-list=${pin}`]);
  console.log(`chromium ${browser.version()}, page ${pageUrl}`);

  console.log(`\n# HTTP/2 over TLS: ${opts.h2}`);
  {
    const result = await twelveRuns(browser, pageUrl, opts.h2, `h2-${Date.now()}`);
    const s = common("h2", result, opts.h2, "h2");
    check(`h2: the ${RUNS} runs shared one connection`, s.connections === 1, `${s.connections} connections`);
    check(`h2: all ${RUNS} streamed at once: the twelfth run's first event (${s.maxFirst} ms) came before the first run ended (${s.minFinish} ms)`,
      s.maxFirst !== null && s.minFinish !== null && s.maxFirst < s.minFinish);
  }

  console.log(`\n# HTTP/1.1 in clear text, the same page: ${opts.h1}`);
  {
    const result = await twelveRuns(browser, pageUrl, opts.h1, `h1-${Date.now()}`);
    const s = common("http/1.1", result, opts.h1, "http/1.1");
    check(`http/1.1: at most ${HTTP1_CONNECTIONS} connections (${s.connections})`, s.connections >= 1 && s.connections <= HTTP1_CONNECTIONS);
    const waited = result.runs.filter((r) => r.first !== null && s.minFinish !== null && r.first > s.minFinish).length;
    check(`http/1.1: the limit shows: ${waited} run(s) got their first event only after the first run ended (last first event ${s.maxFirst} ms > first RUN_FINISHED ${s.minFinish} ms)`,
      s.maxFirst !== null && s.minFinish !== null && s.maxFirst > s.minFinish);
  }

  console.log("\n# the certificate pin is what makes Chromium trust the gateway");
  {
    const unpinned = await launch([]);
    const context = await unpinned.newContext();
    const page = await context.newPage();
    // Why the fetch failed, in the browser's words: a refusal for any other
    // reason (the gateway down, CORS) would prove nothing about the pin.
    const failures = [];
    page.on("requestfailed", (request) => failures.push(request.failure()?.errorText ?? ""));
    await page.goto(pageUrl, { waitUntil: "load", timeout: 15_000 });
    const outcome = await page.evaluate(async (base) => {
      try {
        const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(10_000) });
        return `answered ${response.status}`;
      } catch (e) {
        return `refused: ${e}`;
      }
    }, opts.h2);
    const certificate = failures.some((text) => text.startsWith("net::ERR_CERT_"));
    check(`without --ignore-certificate-errors-spki-list Chromium refuses the gateway's certificate (${outcome}; ${failures.join(", ") || "no failed request"})`,
      outcome.startsWith("refused") && certificate);
  }
}

main().then(() => finish(), finish);
