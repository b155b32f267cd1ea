#!/usr/bin/env node
// The benchmark's "alternative a user would otherwise pick": an AG-UI SSE endpoint in front of an
// A2A agent, built from the published packages (@ag-ui/a2a's A2AAgent + @ag-ui/encoder's
// EventEncoder) on plain node:http. See README.md beside this file.
//
//   node server.mjs --upstream http://127.0.0.1:9000/a2a/jsonrpc [--port 0] [--host 127.0.0.1]
//                   [--card-url http://127.0.0.1:9000/.well-known/agent-card.json]
//                   [--fetch-patch per-run|global]
//
// Prints "READY <port>" once listening. POST /agui with a RunAgentInput JSON body streams AG-UI
// events as text/event-stream. GET /healthz answers 200 "ok". SIGTERM/SIGINT exit with status 0.

import http from "node:http";
import { AsyncLocalStorage } from "node:async_hooks";
import { A2AClient } from "@a2a-js/sdk/client";
import { A2AAgent } from "@ag-ui/a2a";
import { EventEncoder } from "@ag-ui/encoder";

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const DEBUG = process.env.AGUI_ALT_DEBUG === "1"; // logs every upstream fetch to stderr

function parseArgs(argv) {
  const opts = { port: 0, host: "127.0.0.1", upstream: undefined, cardUrl: undefined, fetchPatch: "per-run" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--port") opts.port = Number(next());
    else if (a === "--host") opts.host = next();
    else if (a === "--upstream") opts.upstream = next();
    else if (a === "--card-url") opts.cardUrl = next();
    else if (a === "--fetch-patch") opts.fetchPatch = next();
    else if (a === "-h" || a === "--help") usage();
    else usage(`unknown argument ${a}`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) usage("bad --port");
  if (!opts.upstream && !opts.cardUrl) usage("--upstream URL (or --card-url URL) is required");
  if (opts.fetchPatch !== "per-run" && opts.fetchPatch !== "global") usage("--fetch-patch is per-run or global");
  return opts;
}

function usage(msg) {
  if (msg) process.stderr.write(`server.mjs: ${msg}\n`);
  process.stderr.write(
    "usage: node server.mjs --upstream A2A_JSONRPC_URL [--port N] [--host H] [--card-url URL]\n" +
      "                       [--fetch-patch per-run|global]\n",
  );
  process.exit(msg ? 2 : 0);
}

const opts = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------------------------------------
// Cancellation. A2AAgent.run()'s teardown does nothing and @a2a-js/sdk 0.2.x's client takes no
// AbortSignal: it calls the global `fetch` at call time. So the request's AbortSignal is carried in
// an AsyncLocalStorage and merged into every fetch made inside that request's run. Aborting it cuts
// the upstream SSE stream; the blocking `message/send` fallback A2AAgent then tries fails at once on
// the same aborted signal instead of re-sending the message.
// ---------------------------------------------------------------------------------------------
const runContext = new AsyncLocalStorage();
const originalFetch = globalThis.fetch;
function fetchWithRunSignal(input, init) {
  const ctx = runContext.getStore();
  if (ctx && !init?.signal) init = { ...init, signal: ctx.signal };
  if (DEBUG) {
    const body = typeof init?.body === "string" ? init.body.slice(0, 60) : "";
    process.stderr.write(`fetch ${init?.method ?? "GET"} ${input} in-run=${!!ctx} aborted=${!!init?.signal?.aborted} ${body}\n`);
  }
  return originalFetch(input, init);
}

// A2AAgent adds its A2UI header by replacing globalThis.fetch for the duration of each call and
// putting the previous value back afterwards. With overlapping runs the restores come out of
// order and wrappers pile up for good: measured here, every 300 overlapping streams leave ~110
// more wrapper layers on globalThis.fetch, which every later fetch walks through (a leak without
// bound, and eventually a stack overflow). By default ("per-run") globalThis.fetch is made an
// accessor whose value is kept per run in the AsyncLocalStorage, so each run sees exactly its
// own wrapper (one layer) and the header is still sent. "--fetch-patch global" keeps the library
// as shipped, leak included.
if (opts.fetchPatch === "per-run") {
  let outside = fetchWithRunSignal; // the value seen (and set) outside any run
  Object.defineProperty(globalThis, "fetch", {
    configurable: true,
    enumerable: true,
    get() {
      const ctx = runContext.getStore();
      return ctx?.fetch ?? outside;
    },
    set(value) {
      const ctx = runContext.getStore();
      if (ctx) ctx.fetch = value === fetchWithRunSignal ? undefined : value;
      else outside = value;
    },
  });
} else {
  globalThis.fetch = fetchWithRunSignal;
}

// ---------------------------------------------------------------------------------------------
// The A2A client. The agent card is resolved once at start-up (like any long-lived deployment);
// by default it is synthesised from --upstream, so no card request is made at all.
//
// A fresh A2AClient is made per run on purpose: A2AAgent's constructor wraps the client's
// sendMessage/sendMessageStream in place (to add the A2UI X-A2A-Extensions header), so sharing one
// client across agents nests one more wrapper per request, forever. The subclass only skips the
// card fetch the base constructor would make on every construction.
// ---------------------------------------------------------------------------------------------
let agentCard;

class PreloadedCardA2AClient extends A2AClient {
  // Called by the A2AClient constructor instead of fetching `<base>/.well-known/agent.json`.
  _fetchAndCacheAgentCard() {
    this.serviceEndpointUrl = agentCard.url;
    return Promise.resolve(agentCard);
  }
}

async function resolveAgentCard() {
  if (!opts.cardUrl) {
    return { name: "upstream", url: opts.upstream, capabilities: { streaming: true } };
  }
  const res = await originalFetch(opts.cardUrl, {
    headers: { Accept: "application/json" },
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`agent card ${opts.cardUrl}: HTTP ${res.status}`);
  const card = await res.json();
  if (opts.upstream) card.url = opts.upstream; // an explicit endpoint wins over the card's url
  if (!card.url) throw new Error(`agent card ${opts.cardUrl} has no url`);
  return card;
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------
const active = new Set(); // AbortControllers of runs in progress

function sendPlain(res, status, text) {
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (c) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(Object.assign(new Error("request body too large"), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

async function handleAgui(req, res) {
  let input;
  try {
    input = JSON.parse(await readBody(req));
  } catch (err) {
    if (!res.headersSent && !res.destroyed) sendPlain(res, err.status ?? 400, `bad request body: ${err.message}\n`);
    return;
  }
  if (!input || typeof input !== "object" || Array.isArray(input)) {
    sendPlain(res, 400, "RunAgentInput must be a JSON object\n");
    return;
  }
  if (input.messages !== undefined && !Array.isArray(input.messages)) {
    sendPlain(res, 400, "RunAgentInput.messages must be an array\n");
    return;
  }
  // The usual RunAgentInput defaults, for clients that leave fields out.
  input.threadId ??= crypto.randomUUID();
  input.runId ??= crypto.randomUUID();
  input.messages ??= [];
  input.tools ??= [];
  input.context ??= [];
  input.state ??= {};
  input.forwardedProps ??= {};

  // Always SSE: no Accept is passed, so the encoder never picks protobuf.
  const encoder = new EventEncoder();
  res.writeHead(200, {
    "Content-Type": encoder.getContentType(),
    "Cache-Control": "no-cache",
    // No explicit Connection header: node:http says keep-alive itself, and honours a client's close.
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();

  const abort = new AbortController();
  active.add(abort);
  let subscription;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    active.delete(abort);
  };

  // The client went away before the run ended: stop forwarding and cut the upstream stream.
  res.on("close", () => {
    if (!done) {
      finish();
      subscription?.unsubscribe();
      abort.abort();
    }
  });

  const agent = new A2AAgent({
    a2aClient: new PreloadedCardA2AClient(agentCard.url),
    threadId: input.threadId,
  });

  runContext.run({ signal: abort.signal, fetch: undefined }, () => {
    subscription = agent.run(input).subscribe({
      next(event) {
        if (!done) res.write(encoder.encode(event)); // node:http writes each chunk out at once
      },
      error(err) {
        // A2AAgent has already emitted RUN_ERROR {message} before erroring the observable.
        if (!done) {
          finish();
          if (!abort.signal.aborted) process.stderr.write(`run ${input.runId} failed: ${err?.message ?? err}\n`);
          res.end();
        }
      },
      complete() {
        if (!done) {
          finish();
          res.end();
        }
      },
    });
  });
}

const server = http.createServer({ noDelay: true, keepAliveTimeout: 65_000 }, (req, res) => {
  const path = (req.url ?? "/").split("?", 1)[0];
  if (path === "/agui" && req.method === "POST") {
    handleAgui(req, res).catch((err) => {
      process.stderr.write(`internal error: ${err?.stack ?? err}\n`);
      if (!res.headersSent) sendPlain(res, 500, "internal error\n");
      else res.destroy();
    });
  } else if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
    sendPlain(res, 200, "ok\n");
  } else if (path === "/agui") {
    res.setHeader("Allow", "POST");
    sendPlain(res, 405, "method not allowed\n");
  } else {
    sendPlain(res, 404, "not found\n");
  }
});
server.headersTimeout = 30_000;
server.requestTimeout = 0; // a streamed response may run for minutes
server.on("clientError", (err, socket) => {
  if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
  else socket.destroy();
});

function shutdown(signal) {
  process.stderr.write(`server.mjs: ${signal}, shutting down (${active.size} open runs)\n`);
  server.close();
  for (const abort of active) abort.abort();
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2_000).unref();
  server.on("close", () => process.exit(0));
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));

try {
  agentCard = await resolveAgentCard();
} catch (err) {
  process.stderr.write(`server.mjs: ${err.message}\n`);
  process.exit(1);
}
server.listen({ port: opts.port, host: opts.host, backlog: 4096 }, () => {
  process.stdout.write(`READY ${server.address().port}\n`);
});
