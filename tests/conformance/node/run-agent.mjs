#!/usr/bin/env node
// Live run against an AG-UI endpoint with the REAL HttpAgent.runAgent() of one
// client version (what a CopilotKit frontend would do), printing ONE JSON line:
//
//   {"ok":bool,"client":ver,"types":[...],"events":[...],"arrivals":[...],"result":...,
//    "newMessages":[...],"error":string|null,"warnings":[...]}
//
// arrivals[i] is when events[i] reached onEvent, in ms since runAgent() was
// called: what a user would see, and when.
//
//   node run-agent.mjs --client 1.0.0|0.0.59|0.0.48 --url URL [--thread ID] [--run ID]
//        [--message TEXT] [--forwarded-props JSON] [--header 'K: V']... [--timeout-ms N] [--verbose]
//
// ok = runAgent() resolved, the last event was RUN_FINISHED or RUN_ERROR (the
// client itself resolves a truncated stream as success), the run did not time
// out, and the client logged no warning about dropped/stripped/unknown/
// deprecated material (1.0 only warns where 0.0.x fails). Exit 0 if ok, 1 if
// not, 2 on usage errors. Library logging goes to stderr with --verbose only,
// so stdout carries nothing but the JSON line.

import { randomUUID } from "node:crypto";

const CLIENTS = {
  "1.0.0": "@ag-ui/client",
  "0.0.59": "agui-client-0-0-59", // npm alias, see package.json
  "0.0.48": "agui-client-0-0-48",
};
// Same rule as verify-sse.mjs.
const FINDING_WARNING = /dropping|strip|unrecogni[sz]ed|unknown|deprecated/i;
const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);

const USAGE =
  "usage: node run-agent.mjs --client 1.0.0|0.0.59|0.0.48 --url URL [--thread ID] [--run ID]\n" +
  "         [--message TEXT] [--forwarded-props JSON] [--header 'K: V']... [--timeout-ms N] [--verbose]\n";

function usageError(msg) {
  process.stderr.write(`run-agent: ${msg}\n${USAGE}`);
  process.exit(2);
}

// ---------------------------------------------------------------- arguments --

const opts = {
  client: undefined,
  url: undefined,
  thread: undefined,
  run: undefined,
  message: "Hello! Please respond briefly.",
  forwardedProps: {},
  headers: {},
  timeoutMs: 30000,
  verbose: false,
};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const value = () => {
    if (i + 1 >= argv.length) usageError(`${a} needs a value`);
    return argv[++i];
  };
  switch (a) {
    case "--client": opts.client = value(); break;
    case "--url": opts.url = value(); break;
    case "--thread": opts.thread = value(); break;
    case "--run": opts.run = value(); break;
    case "--message": opts.message = value(); break;
    case "--forwarded-props":
      try {
        opts.forwardedProps = JSON.parse(value());
      } catch (err) {
        usageError(`--forwarded-props is not JSON: ${err.message}`);
      }
      break;
    case "--header": {
      const h = value();
      const colon = h.indexOf(":");
      if (colon <= 0) usageError(`--header must look like 'Name: value', got '${h}'`);
      opts.headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
      break;
    }
    case "--timeout-ms":
      opts.timeoutMs = Number(value());
      if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) usageError("--timeout-ms must be a positive number");
      break;
    case "--verbose": case "-v": opts.verbose = true; break;
    case "--help": case "-h": process.stdout.write(USAGE); process.exit(0);
    default: usageError(`unknown argument ${a}`);
  }
}
if (!CLIENTS[opts.client]) usageError(`--client must be one of ${Object.keys(CLIENTS).join(", ")}`);
if (!opts.url) usageError("--url is required");

// ------------------------------------------------------------------ console --

// Keep stdout for the JSON line: library logs (runAgent prints "Agent execution
// failed" via console.error, enforce/compat warn via console.warn) are captured
// and only echoed to stderr with --verbose. The enforce/compat stages go silent
// when this variable is set, which would hide the warnings we check for.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;
const warnings = [];
for (const level of ["log", "info", "debug", "warn", "error"]) {
  console[level] = (...args) => {
    const text = args.map((x) => (x instanceof Error ? x.message : typeof x === "string" ? x : safeJson(x))).join(" ");
    if (level === "warn") warnings.push(text);
    if (opts.verbose) process.stderr.write(`[${level}] ${text}\n`);
  };
}
// One readable line: ZodErrors as "path: message" per issue instead of a JSON
// dump, and the network cause behind undici's bare "fetch failed".
function describeError(e) {
  if (Array.isArray(e?.issues)) {
    return "schema: " + e.issues.map((i) => `${i.path?.length ? i.path.join(".") : "<event>"}: ${i.message}`).join("; ");
  }
  const msg = e instanceof Error ? e.message : String(e);
  const cause = e?.cause?.message || e?.cause?.code;
  return cause ? `${msg} (${cause})` : msg;
}

function safeJson(x) {
  try {
    return JSON.stringify(x);
  } catch {
    return String(x);
  }
}

// --------------------------------------------------------------------- run --

const { HttpAgent } = await import(CLIENTS[opts.client]);

const agent = new HttpAgent({
  url: opts.url,
  headers: opts.headers,
  // threadId is fixed at construction in every version (runAgent has no such param).
  ...(opts.thread ? { threadId: opts.thread } : {}),
});
agent.messages = [{ id: `user-${randomUUID()}`, role: "user", content: opts.message }];

const events = [];
const arrivals = [];
let timedOut = false;
let hardTimer;

// Abort through the client's own abortRun() (HttpAgent aborts its fetch). The
// client turns an abort into a synthetic RUN_ERROR {code:"abort"} or swallows
// it, so the run may still "resolve": the flag keeps that from counting as ok.
const timer = setTimeout(() => {
  timedOut = true;
  agent.abortRun();
}, opts.timeoutMs);

// If nothing settles shortly after the abort (e.g. a middleware ignores it),
// give up anyway: the script must be bounded.
const hardStop = new Promise((resolve) => {
  hardTimer = setTimeout(() => resolve({ hardTimeout: true }), opts.timeoutMs + 2000);
});

const started = performance.now();
const run = agent
  .runAgent(
    {
      ...(opts.run ? { runId: opts.run } : {}),
      tools: [],
      context: [],
      forwardedProps: opts.forwardedProps,
    },
    {
      onEvent: ({ event }) => {
        events.push(event);
        arrivals.push(Math.round(performance.now() - started));
      },
    },
  )
  .then((value) => ({ value }), (error) => ({ error }));

const outcome = await Promise.race([run, hardStop]);
clearTimeout(timer);
clearTimeout(hardTimer);

const types = events.map((e) => e.type);
const last = types.at(-1);
let error = null;
if (outcome.hardTimeout || timedOut) {
  error = `timeout: no complete run within ${opts.timeoutMs} ms`;
} else if (outcome.error) {
  error = describeError(outcome.error);
} else if (!TERMINAL.has(last)) {
  error = `no terminal event: stream ended after ${last ?? "no events"} without RUN_FINISHED or RUN_ERROR`;
} else {
  const finding = warnings.find((w) => FINDING_WARNING.test(w));
  if (finding) error = `client warning: ${finding}`;
}

const report = {
  ok: error === null,
  client: opts.client,
  types,
  events,
  arrivals,
  result: outcome.value?.result ?? null,
  newMessages: outcome.value?.newMessages ?? [],
  error,
  warnings,
};
// Exit explicitly (after the write is flushed): after a hard timeout a hung
// fetch could otherwise keep the event loop alive.
process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(report.ok ? 0 : 1));
