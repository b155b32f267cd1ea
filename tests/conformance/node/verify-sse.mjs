#!/usr/bin/env node
// Offline AG-UI conformance check of recorded SSE bodies with the REAL client
// libraries: @ag-ui/client 1.0.0, 0.0.59 (what CopilotKit runtime/react pins)
// and 0.0.48 (what @copilotkitnext pins), installed side by side via npm aliases.
//
//   node verify-sse.mjs [--verbose] [--versions] [--client VER]... FILE|DIR...
//
// A DIR is searched recursively for files named *.agui.sse. Every file is
// checked against every client version, in two passes that must both pass:
//
//  1. "stages": the recorded bytes go through the client's own exported stages,
//     in the order AbstractAgent.runAgent() chains them:
//       transformHttpEventStream  (the real SSE parser, parseSSEStream; on 0.0.x
//                                  this is also where EventSchemas.parse runs)
//       enforceEvents             (1.0 only: schema check, drops/strips unknowns)
//       transformChunks           (*_CHUNK -> START/CONTENT/END)
//       verifyEvents              (sequence rules)
//       defaultApplyEvents        (the reducer: rebuilds messages and state)
//  2. "runAgent": the same bytes are served by an in-memory fetch() to a stock
//     HttpAgent and run through the unmodified HttpAgent.runAgent(), so the
//     middleware chain (1.0's always-on CompatibilityBoundary) and result
//     handling are covered too. (Pass 1 has no CompatibilityBoundary, so on 1.0
//     a legacy shape such as `parentMessageId: null` or THINKING_* is fatal or
//     dropped there, while pass 2 converts it with a "deprecated" warning:
//     either way the file fails, which is what we want from our gateway.)
//
// On top of what the client checks, the last event must be RUN_FINISHED or
// RUN_ERROR (the client resolves a truncated stream as success), and any
// library warning about dropped/stripped/unknown/deprecated material fails the
// check (1.0 only warns where 0.0.x fails; we want zero findings).
//
// Output, per file and version: "ok <ver> <file> (<n> events)" (n = events
// out of verifyEvents) or "FAIL <ver> <file>: <error>"; then "N passed,
// M failed". Exit 1 if anything failed, 2 on usage errors or a broken install.

import { readFileSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Observable, lastValueFrom, toArray, tap, catchError } from "rxjs";

// The three client versions. `pkg` is the dependency name in package.json (the
// 0.0.x ones are npm aliases, each with its own nested @ag-ui/core).
const CLIENTS = [
  { version: "1.0.0", pkg: "@ag-ui/client", hasEnforce: true },
  { version: "0.0.59", pkg: "agui-client-0-0-59", hasEnforce: false },
  // 0.0.48's transformChunks/verifyEvents take a `debug: boolean`, not a logger.
  { version: "0.0.48", pkg: "agui-client-0-0-48", hasEnforce: false, debugArg: false },
];

// Warnings that mean "the client threw something of ours away or rewrote it".
// 1.0 enforce: "Dropping unrecognised event ...", "Removed unrecognised material
// at ..."; 1.0 compat: "Converting deprecated ..."; RUN_STARTED with a newer
// protocolVersion: "... Unrecognised material will be stripped ...".
const FINDING_WARNING = /dropping|strip|unrecogni[sz]ed|unknown|deprecated/i;

const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);

// ---------------------------------------------------------------- arguments --

const argv = process.argv.slice(2);
let verbose = false;
let versionsOnly = false;
const onlyClients = [];
const paths = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--verbose" || a === "-v") verbose = true;
  else if (a === "--versions") versionsOnly = true;
  else if (a === "--client") onlyClients.push(argv[++i]);
  else if (a === "--help" || a === "-h") usage(0);
  else if (a.startsWith("-") && a !== "-") usageError(`unknown option ${a}`);
  else paths.push(a);
}
const selected = onlyClients.length
  ? CLIENTS.filter((c) => onlyClients.includes(c.version))
  : CLIENTS;
if (onlyClients.some((v) => !CLIENTS.find((c) => c.version === v))) {
  usageError(`--client must be one of ${CLIENTS.map((c) => c.version).join(", ")}`);
}
if (!versionsOnly && paths.length === 0) usage(2);

function usage(code) {
  (code ? process.stderr : process.stdout).write(
    "usage: node verify-sse.mjs [--verbose] [--versions] [--client 1.0.0|0.0.59|0.0.48]... FILE|DIR...\n" +
      "  DIRs are searched recursively for *.agui.sse files.\n",
  );
  process.exit(code);
}
function usageError(msg) {
  process.stderr.write(`verify-sse: ${msg}\n`);
  usage(2);
}

// ------------------------------------------------------------------ console --

// The libraries log through console.warn/error (e.g. runAgent prints "Agent
// execution failed" before rejecting). Capture everything per check; echo it to
// stderr only with --verbose. The enforce/compat stages stay silent when this
// variable is set, which would hide exactly what we want to see.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;
const realConsole = { warn: console.warn, error: console.error, log: console.log };
let captured = [];
for (const level of ["warn", "error", "info", "debug"]) {
  console[level] = (...args) => {
    const text = args.map((x) => (x instanceof Error ? x.message : typeof x === "string" ? x : safeJson(x))).join(" ");
    captured.push({ level, text });
    if (verbose) process.stderr.write(`  [${level}] ${text}\n`);
  };
}
function safeJson(x) {
  try {
    return JSON.stringify(x);
  } catch {
    return String(x);
  }
}

// ---------------------------------------------------------- load libraries --

const require = createRequire(import.meta.url);

// Resolve each alias, then its OWN @ag-ui/core as seen from the client's
// directory (the nested node_modules), and prove that this is the module
// instance the client actually uses: the client re-exports core, so its
// EventType must be the very same object as the nested core's.
async function loadClient(c) {
  const pkgJsonPath = require.resolve(`${c.pkg}/package.json`);
  const fromClient = createRequire(pkgJsonPath);
  const corePkgPath = fromClient.resolve("@ag-ui/core/package.json");
  const { name: clientName, version: clientVersion } = JSON.parse(readFileSync(pkgJsonPath, "utf8"));
  const coreVersion = JSON.parse(readFileSync(corePkgPath, "utf8")).version;
  const lib = await import(c.pkg);
  const core = await import(pathToFileURL(join(dirname(corePkgPath), "dist", "index.mjs")).href);
  const zodVersion = JSON.parse(readFileSync(fromClient.resolve("zod/package.json"), "utf8")).version;
  const problems = [];
  if (clientVersion !== c.version) problems.push(`client is ${clientVersion}`);
  if (coreVersion !== c.version) problems.push(`core is ${coreVersion}`);
  if (lib.EventType !== core.EventType) problems.push("client does not use the resolved core module");
  for (const name of ["transformHttpEventStream", "transformChunks", "verifyEvents", "defaultApplyEvents", "HttpAgent"]) {
    if (typeof lib[name] !== "function") problems.push(`${name} not exported`);
  }
  if (c.hasEnforce && typeof lib.enforceEvents !== "function") problems.push("enforceEvents not exported");
  if (!c.hasEnforce && typeof lib.EventSchemas?.parse !== "function") problems.push("EventSchemas not exported");
  return {
    ...c,
    lib,
    info: `${clientName}@${clientVersion}${c.pkg === clientName ? "" : ` [alias ${c.pkg}]`} (@ag-ui/core ${coreVersion} at ${dirname(corePkgPath)}, zod ${zodVersion}, ${Object.keys(core.EventType).length} event types)`,
    problems,
  };
}

let clients;
try {
  clients = await Promise.all(selected.map(loadClient));
} catch (err) {
  process.stderr.write(`verify-sse: cannot load the client libraries (${err.message}); run tests/conformance/setup.sh\n`);
  process.exit(2);
}
for (const c of clients) {
  realConsole.log(`# ${c.version}: ${c.info}`);
  if (c.problems.length) {
    process.stderr.write(`verify-sse: broken install for ${c.version}: ${c.problems.join("; ")}\n`);
    process.exit(2);
  }
}
if (versionsOnly && paths.length === 0) process.exit(0);

// -------------------------------------------------------------- file list --

function collect(p, out) {
  let st;
  try {
    st = statSync(p);
  } catch {
    usageError(`no such file or directory: ${p}`);
  }
  if (st.isDirectory()) {
    for (const name of readdirSync(p).sort()) {
      const child = join(p, name);
      if (statSync(child).isDirectory()) collect(child, out);
      else if (name.endsWith(".agui.sse")) out.push(child);
    }
  } else {
    out.push(p); // explicitly named files are checked whatever their name
  }
  return out;
}
const files = paths.flatMap((p) => collect(p, []));
if (files.length === 0) usageError("no *.agui.sse files found");

// ------------------------------------------------------------------ checks --

// What runHttpRequest() would emit for a 200 text/event-stream response whose
// body is `bytes`: one HEADERS event, then DATA. Emitted asynchronously like
// the real fetch: transformHttpEventStream subscribes to its source eagerly and
// forwards into a Subject, so a synchronous source would emit before the
// pipeline below is subscribed.
function recordedHttpEvents(bytes) {
  return new Observable((subscriber) => {
    const timer = setImmediate(() => {
      subscriber.next({
        type: "headers",
        status: 200,
        headers: new Headers({ "content-type": "text/event-stream" }),
      });
      subscriber.next({ type: "data", data: bytes });
      subscriber.complete();
    });
    return () => clearImmediate(timer);
  });
}

// Remember which stage an error first came out of, for the report. Errors
// travel downstream through every later stage, so the first tag wins.
const errorStage = new WeakMap();
const tagAs = (stage) => (err) => {
  if (err && typeof err === "object" && !errorStage.has(err)) errorStage.set(err, stage);
  throw err;
};
const tagged = (stage, operator) => (source$) => operator(source$).pipe(catchError(tagAs(stage)));

// A RunAgentInput like the one HttpAgent would send on a first turn.
const replayInput = () => ({
  threadId: "replay-thread",
  runId: "replay-run",
  state: {},
  messages: [{ id: "replay-user-1", role: "user", content: "replay" }],
  tools: [],
  context: [],
  forwardedProps: {},
});

// Pass 1: the exported stages, chained by hand in runAgent's order.
async function runStages(c, bytes) {
  const { lib } = c;
  const input = replayInput();
  const agent = new lib.HttpAgent({ url: "http://replay.invalid/", threadId: input.threadId });
  agent.messages = input.messages;
  const events = [];
  // Every stage up to verify handles one event synchronously before the parser
  // emits the next, so the last event out of the transport is the culprit of
  // an enforce/chunks/verify error, and the one after it of a parse error.
  const where = { n: 0, type: undefined };
  const located = (stage) => (err) => {
    if (err && typeof err === "object" && !errorStage.has(err)) {
      errorStage.set(err, stage === "sse" || stage === "sse+schema"
        ? `${stage} @ event ${where.n + 1}`
        : `${stage} @ event ${where.n} ${where.type}`);
    }
    throw err;
  };
  const locatedStage = (stage, operator) => (src) => operator(src).pipe(catchError(located(stage)));
  const transport$ = lib.transformHttpEventStream(recordedHttpEvents(bytes)).pipe(
    catchError(located(c.hasEnforce ? "sse" : "sse+schema")),
    tap((e) => {
      where.n++;
      where.type = e?.type;
    }),
  );
  const stages = [
    // 0.0.x has no enforce stage: its schema check (EventSchemas.parse from its
    // own @ag-ui/core) already ran inside transformHttpEventStream above.
    ...(c.hasEnforce ? [locatedStage("enforce", lib.enforceEvents(c.debugArg))] : []),
    locatedStage("chunks", lib.transformChunks(c.debugArg)),
    locatedStage("verify", lib.verifyEvents(c.debugArg)),
    tap((e) => events.push(e)),
  ];
  const verified$ = transport$.pipe(...stages);
  // The reducer runs subscribers asynchronously, so its errors are not located.
  const apply = tagged("apply", (src) => lib.defaultApplyEvents(input, src, agent, [], c.debugArg));
  const mutations = await lastValueFrom(apply(verified$).pipe(toArray()));
  const messages = mutations.filter((m) => m.messages).at(-1)?.messages ?? agent.messages;
  return { events, messages };
}

// Pass 2: the stock HttpAgent.runAgent(), with fetch() answering from memory.
// (Patching the global is the only hook 0.0.48 has; 0.0.59/1.0 call the global
// through their default `fetch` option too.) Checks run one at a time, so the
// patch cannot leak into another check.
async function runAgentReplay(c, bytes) {
  const { lib } = c;
  const input = replayInput();
  const realFetch = globalThis.fetch;
  globalThis.fetch = async () =>
    new Response(bytes, { status: 200, headers: { "content-type": "text/event-stream" } });
  try {
    const agent = new lib.HttpAgent({ url: "http://replay.invalid/agui", threadId: input.threadId });
    agent.messages = structuredClone(input.messages);
    const events = [];
    const out = await agent.runAgent({ runId: input.runId }, { onEvent: ({ event }) => events.push(event) });
    return { events, result: out?.result, newMessages: out?.newMessages ?? [] };
  } catch (err) {
    tagAs("runAgent")(err);
  } finally {
    globalThis.fetch = realFetch;
  }
}

function oneLine(err) {
  const stage = err && typeof err === "object" ? errorStage.get(err) : undefined;
  let msg;
  if (Array.isArray(err?.issues)) {
    // ZodError (zod 3 and zod/v4): "path: message" per issue instead of the JSON dump.
    msg = "schema: " + err.issues
      .map((i) => `${i.path?.length ? i.path.join(".") : "<event>"}: ${truncate(i.message, 120)}`)
      .join("; ");
  } else {
    msg = err instanceof Error ? err.message : String(err);
  }
  msg = msg.replace(/\s+/g, " ").trim();
  if (!verbose && msg.length > 400) msg = `${msg.slice(0, 400)}…`;
  return stage ? `[${stage}] ${msg}` : msg;
}

function truncate(text, max) {
  return verbose || text.length <= max ? text : `${text.slice(0, max)}…`;
}

async function check(c, bytes) {
  captured = [];
  let stages;
  try {
    stages = await runStages(c, bytes);
    const last = stages.events.at(-1)?.type;
    if (!TERMINAL.has(last)) {
      throw new Error(`[terminal] stream does not end with RUN_FINISHED or RUN_ERROR (last event: ${last ?? "none"})`);
    }
    const replay = await runAgentReplay(c, bytes);
    const lastReplay = replay.events.at(-1)?.type;
    if (!TERMINAL.has(lastReplay)) {
      throw new Error(`[terminal] runAgent saw no terminal event (last event: ${lastReplay ?? "none"})`);
    }
    const finding = captured.find((w) => FINDING_WARNING.test(w.text));
    if (finding) throw new Error(`[warning] ${finding.text}`);
    if (verbose) {
      process.stderr.write(
        `  ${c.version}: ${stages.messages.length} messages rebuilt (${stages.messages.map((m) => m.role).join(",")}); runAgent result=${safeJson(replay.result)}\n`,
      );
    }
    return { ok: true, n: stages.events.length };
  } catch (err) {
    return { ok: false, error: oneLine(err) };
  }
}

let passed = 0;
let failed = 0;
// A golden case written for a 1.0 client (its case.json says
// "protocolVersion": "1.0": SUBAGENT_*, the cancelled outcome) is checked
// with the clients that would receive it; the gateway sends older clients
// the legacy form, which other cases cover.
function clientsFor(file) {
  try {
    const c = JSON.parse(readFileSync(join(dirname(file), "case.json"), "utf8"));
    if (typeof c.protocolVersion === "string" && Number(c.protocolVersion.split(".")[0]) >= 1) {
      return clients.filter((x) => x.version.startsWith("1."));
    }
  } catch {
    // no case.json: a recording, checked with every client
  }
  return clients;
}

for (const file of files) {
  const bytes = new Uint8Array(readFileSync(file)); // bytes, not text: CRLF etc. must reach the parser untouched
  for (const c of clientsFor(file)) {
    if (verbose) process.stderr.write(`-- ${c.version} ${file}\n`);
    const r = await check(c, bytes);
    if (r.ok) {
      passed++;
      realConsole.log(`ok ${c.version} ${file} (${r.n} events)`);
    } else {
      failed++;
      realConsole.log(`FAIL ${c.version} ${file}: ${r.error}`);
    }
  }
}
realConsole.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
