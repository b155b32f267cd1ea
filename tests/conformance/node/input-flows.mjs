#!/usr/bin/env node
// What AG-UI clients send, through the gateway, driven by the REAL HttpAgent of
// one client version: each flow is a short conversation of several runs in one
// thread, the way an app drives it. Prints ONE JSON line:
//
//   {"ok":bool,"flow":...,"client":...,"runs":[{types,result,outcome,error}],
//    "messages":[...final agent.messages],"state":{...},"text":"...","error":null|string}
//
//   node input-flows.mjs --client 1.0.0|0.0.59|0.0.48 --url URL/agui --flow FLOW [--timeout-ms N]
//
// Flows (the agent is tests/agents/python-v1/input_agent.py):
//   clienttool  declares get_weather; the agent calls it; the app runs it and runs
//               again with the tool message; two turns in one thread
//   resolved    (1.0, gateway with interrupts) "ask" -> interrupt; resume resolved {city: Paris}
//   cancelled   (1.0, gateway with interrupts) "ask" -> interrupt; resume cancelled
//   state       state {city: Paris} and one context entry; the agent answers a snapshot and a delta
//
// ok is decided by the Rust test from the JSON (and the agent's /received log);
// this script only fails on its own errors. Exit 0 unless a run threw.

import { randomUUID } from "node:crypto";

const CLIENTS = {
  "1.0.0": "@ag-ui/client",
  "0.0.59": "agui-client-0-0-59",
  "0.0.48": "agui-client-0-0-48",
};

const opts = { client: undefined, url: undefined, flow: undefined, timeoutMs: 30000 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const value = () => argv[++i];
  switch (argv[i]) {
    case "--client": opts.client = value(); break;
    case "--url": opts.url = value(); break;
    case "--flow": opts.flow = value(); break;
    case "--timeout-ms": opts.timeoutMs = Number(value()); break;
    default:
      process.stderr.write(`input-flows: unknown argument ${argv[i]}\n`);
      process.exit(2);
  }
}
if (!CLIENTS[opts.client] || !opts.url || !opts.flow) {
  process.stderr.write("usage: node input-flows.mjs --client 1.0.0|0.0.59|0.0.48 --url URL --flow FLOW\n");
  process.exit(2);
}

// Library logs stay off stdout; warnings are kept for the report.
const warnings = [];
for (const level of ["log", "info", "debug", "warn", "error"]) {
  console[level] = (...args) => {
    if (level === "warn") warnings.push(args.map(String).join(" "));
  };
}

const { HttpAgent } = await import(CLIENTS[opts.client]);
const agent = new HttpAgent({ url: opts.url, threadId: `thread-${randomUUID()}` });
const runs = [];
let current = null;
agent.subscribe({
  onEvent({ event }) {
    if (!current) return;
    current.types.push(event.type);
    if (event.type === "RUN_FINISHED") {
      current.result = event.result ?? null;
      current.outcome = event.outcome ?? null;
    }
    if (event.type === "RUN_ERROR") current.error = event.message;
  },
});

const GET_WEATHER = {
  name: "get_weather",
  description: "Get the weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

async function run(parameters = {}) {
  current = { types: [], result: null, outcome: null, error: null };
  runs.push(current);
  try {
    await agent.runAgent(parameters);
  } catch (err) {
    current.error = current.error ?? (err instanceof Error ? err.message : String(err));
  }
  const done = current;
  current = null;
  return done;
}

function user(text) {
  agent.messages.push({ id: `user-${randomUUID()}`, role: "user", content: text });
}

const flows = {
  // The app's loop: run; for every call of a tool it declared and that has no
  // result yet, run the tool and add its result; run again. Bounded.
  async clienttool() {
    for (let turn = 0; turn < 2; turn++) {
      user("clienttool");
      for (let step = 0; step < 3; step++) {
        const done = await run({ tools: [GET_WEATHER] });
        if (done.error) return;
        const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
        const calls = agent.messages
          .flatMap((m) => (m.role === "assistant" ? m.toolCalls ?? [] : []))
          .filter((c) => c.function.name === "get_weather" && !answered.has(c.id));
        if (calls.length === 0) break;
        for (const call of calls) {
          const args = JSON.parse(call.function.arguments);
          agent.messages.push({
            id: `tool-${randomUUID()}`,
            role: "tool",
            toolCallId: call.id,
            content: JSON.stringify({ temperature: 21, city: args.city }),
          });
        }
      }
    }
  },
  async resolved() {
    user("ask");
    await run();
    const [interrupt] = agent.pendingInterrupts ?? [];
    if (!interrupt) return;
    await run({ resume: [{ interruptId: interrupt.id, status: "resolved", payload: { city: "Paris" } }] });
  },
  async cancelled() {
    user("ask");
    await run();
    const [interrupt] = agent.pendingInterrupts ?? [];
    if (!interrupt) return;
    await run({ resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
  },
  async state() {
    agent.state = { city: "Paris" };
    user("state");
    await run({ context: [{ description: "the user's name", value: "Ada" }] });
  },
};

const flow = flows[opts.flow];
if (!flow) {
  process.stderr.write(`input-flows: unknown flow ${opts.flow}\n`);
  process.exit(2);
}
let error = null;
const timer = setTimeout(() => {
  error = `timed out after ${opts.timeoutMs} ms`;
  agent.abortRun?.();
}, opts.timeoutMs);
try {
  await flow();
} catch (err) {
  error = err instanceof Error ? err.message : String(err);
}
clearTimeout(timer);

const text = agent.messages
  .filter((m) => m.role === "assistant" && typeof m.content === "string")
  .map((m) => m.content)
  .join("\n");
const out = {
  ok: error === null && runs.every((r) => !r.error),
  flow: opts.flow,
  client: opts.client,
  threadId: agent.threadId,
  runs,
  messages: agent.messages,
  state: agent.state,
  pendingInterrupts: agent.pendingInterrupts ?? [],
  text,
  warnings,
  error,
};
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(error === null ? 0 : 1);
