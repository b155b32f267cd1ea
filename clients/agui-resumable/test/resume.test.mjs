#!/usr/bin/env node
// Cuts a live AG-UI run mid-frame and checks what the resumable agent makes
// of it, with each of the three @ag-ui/client versions the repo pins
// (tests/conformance/node: @ag-ui/client 1.0.0, agui-client-0-0-59 = 0.0.59,
// agui-client-0-0-48 = 0.0.48).
//
//   node clients/agui-resumable/test/resume.test.mjs --gateway URL --agent URL
//        [--timeout-ms 30000] [--cut-frames 5] [--cut-bytes 45] [--verbose]
//
// --gateway is the gateway's base URL (http://127.0.0.1:PORT), --agent the
// base URL of tests/agents/python-v1/input_agent.py behind it.
//
// Per version:
//   1. a loopback TCP proxy in front of the gateway forwards bytes both ways;
//      on its first connection it counts --cut-frames blank lines ("\n\n")
//      in the response body, forwards --cut-bytes more (into the next frame),
//      then resets the client socket and closes the gateway side. Later
//      connections pass through untouched;
//   2. runAgent, user message `count 12 40`, fresh threadId, through the
//      proxy (`http://127.0.0.1:<proxy>/agui`), every event collected;
//   3. connectAgent on a fresh agent, same threadId, straight to the gateway
//      (the thread's replay: its messages restored), then again on the same
//      agent (a client that still holds them: nothing duplicated);
//   4. connectAgent on a thread the gateway never saw (the 204 path);
//   5. runAgent of a long run, abortRun() after three text deltas: the
//      agent's task is cancelled at once (`stopCancelled`).
//
// It asserts nothing. stdout: one JSON line per version
//   {client, cutConnections, proxyConnections, reconnects, lastEventId,
//    types, text, connectTypes, connectMessages, connectAgain, emptyConnectOk,
//    emptyConnectEvents, stopCancelled, received, cutTail, unhandledRejections,
//    error}
// where `received` counts the agent's /received entries for that thread and
// `cutTail` shows the bytes the client got of the frame that was cut.
// Exit 0 when the lines are printed, 1 when the script itself fails, 2 on
// a usage error. Logs go to stderr. Every wait is bounded by --timeout-ms
// per version.

import { randomUUID } from "node:crypto";
import { readFileSync, writeSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { resumable } from "../index.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NODE_MODULES = path.resolve(HERE, "../../../tests/conformance/node/node_modules");
const CLIENTS = [
  { label: "1.0.0", dir: "@ag-ui/client" },
  { label: "0.0.59", dir: "agui-client-0-0-59" },
  { label: "0.0.48", dir: "agui-client-0-0-48" },
];
const USER_TEXT = "count 12 40";

// stdout carries the report lines only.
for (const level of ["log", "info", "debug", "trace", "warn"]) console[level] = console.error.bind(console);
const report = (value) => writeSync(1, `${JSON.stringify(value)}\n`);

function usage(message) {
  if (message) process.stderr.write(`resume.test: ${message}\n`);
  process.stderr.write(
    "usage: node resume.test.mjs --gateway URL --agent URL [--timeout-ms N] [--cut-frames N] [--cut-bytes N] [--verbose]\n",
  );
  process.exit(2);
}

const opts = { gateway: null, agent: null, timeoutMs: 30000, cutFrames: 5, cutBytes: 45, verbose: false };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    const count = (name, min) => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < min) usage(`${name} must be an integer >= ${min}`);
      return n;
    };
    switch (flag) {
      case "--gateway":
        opts.gateway = value().replace(/\/+$/, "");
        break;
      case "--agent":
        opts.agent = value().replace(/\/+$/, "");
        break;
      case "--timeout-ms":
        opts.timeoutMs = count("--timeout-ms", 1);
        break;
      case "--cut-frames":
        opts.cutFrames = count("--cut-frames", 1);
        break;
      case "--cut-bytes":
        opts.cutBytes = count("--cut-bytes", 0);
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
  if (!opts.gateway || !opts.agent) usage("--gateway and --agent are required");
}

const trace = (message) => {
  if (opts.verbose) process.stderr.write(`resume.test: ${message}\n`);
};

// An unhandled rejection is a finding, not a crash: counted per version.
let unhandled = [];
process.on("unhandledRejection", (reason) => {
  unhandled.push(String(reason?.stack ?? reason));
  process.stderr.write(`resume.test: unhandled rejection: ${reason?.stack ?? reason}\n`);
});

/**
 * A TCP proxy to the gateway. Its first connection is cut: after `cutFrames`
 * blank lines in the response body and `cutBytes` more bytes, the client
 * socket is reset and the gateway socket closed.
 */
async function startProxy(target) {
  const stats = { connections: 0, cut: 0, cutTail: null };
  const sockets = new Set();
  const server = net.createServer((client) => {
    const index = stats.connections++;
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", (e) => trace(`proxy connection ${index}: ${e.code ?? e.message}`));
    }
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.pipe(upstream);
    if (index > 0) {
      upstream.pipe(client);
      return;
    }
    // The cut connection: parse just enough of the response to find the spot.
    let headerTail = ""; // the last bytes of the head, to find "\r\n\r\n"
    let inBody = false;
    let prev = -1;
    let blankLines = 0;
    let extraLeft = null;
    let sinceBoundary = [];
    let cutting = false;
    upstream.on("data", (chunk) => {
      if (cutting) return;
      let cutAt = -1;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i];
        if (!inBody) {
          headerTail = (headerTail + String.fromCharCode(byte)).slice(-4);
          if (headerTail === "\r\n\r\n") inBody = true;
          continue;
        }
        if (extraLeft !== null) {
          sinceBoundary.push(byte);
          extraLeft -= 1;
          if (extraLeft <= 0) {
            cutAt = i + 1;
            break;
          }
          continue;
        }
        if (byte === 0x0a && prev === 0x0a) {
          blankLines += 1;
          if (blankLines === opts.cutFrames) {
            extraLeft = opts.cutBytes;
            if (extraLeft === 0) {
              cutAt = i + 1;
              break;
            }
          }
        }
        prev = byte;
      }
      if (cutAt === -1) {
        client.write(chunk);
        return;
      }
      cutting = true;
      upstream.pause();
      stats.cutTail = Buffer.from(sinceBoundary).toString("latin1");
      client.write(chunk.subarray(0, cutAt), () => {
        // Give the bytes time to reach the client before the reset.
        setTimeout(() => {
          stats.cut += 1;
          trace(`proxy: cut connection 0 after ${blankLines} frames + ${JSON.stringify(stats.cutTail)}`);
          if (typeof client.resetAndDestroy === "function") client.resetAndDestroy();
          else client.destroy();
          upstream.destroy();
        }, 50);
      });
    });
    upstream.on("end", () => client.end());
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    port: server.address().port,
    stats,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** `promise`, or a rejection when `deadline` passes first (then `onTimeout` runs). */
function beforeDeadline(promise, deadline, what, onTimeout) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      try {
        onTimeout?.();
      } catch {
        // the timeout is what gets reported
      }
      reject(new Error(`timeout: ${what} did not finish within ${opts.timeoutMs} ms`));
    }, Math.max(0, deadline - Date.now()));
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const describe = (error) => (error ? `${error.name ?? "Error"}: ${error.message ?? error}` : null);

async function received(threadId, deadline) {
  const response = await beforeDeadline(fetch(`${opts.agent}/received`), deadline, "GET /received");
  const list = await beforeDeadline(response.json(), deadline, "GET /received body");
  if (!Array.isArray(list)) throw new Error(`GET /received is not a JSON list: ${JSON.stringify(list).slice(0, 200)}`);
  return list.filter((entry) => entry?.contextId === threadId).length;
}

/** The cancels the agent has received so far. */
async function cancels(deadline) {
  const response = await beforeDeadline(fetch(`${opts.agent}/received`), deadline, "GET /received");
  const list = await beforeDeadline(response.json(), deadline, "GET /received body");
  return Array.isArray(list) ? list.filter((entry) => typeof entry?.cancel === "string").length : 0;
}

async function runClient({ label, dir }) {
  unhandled = [];
  const deadline = Date.now() + opts.timeoutMs;
  const packageDir = path.join(NODE_MODULES, dir);
  const version = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")).version;
  if (version !== label) throw new Error(`${dir} is @ag-ui/client ${version}, expected ${label}`);
  const client = await import(pathToFileURL(path.join(packageDir, "dist/index.mjs")).href);
  const Agent = resumable(client.HttpAgent, client);

  const line = {
    client: version,
    cutConnections: 0,
    proxyConnections: 0,
    reconnects: 0,
    lastEventId: null,
    types: [],
    text: "",
    connectTypes: [],
    connectMessages: [],
    connectAgain: [],
    emptyConnectOk: false,
    emptyConnectEvents: null,
    stopCancelled: false,
    received: null,
    cutTail: null,
    unhandledRejections: 0,
    error: null,
  };
  const errors = [];
  const threadId = `resume-${version}-${randomUUID()}`;

  // 1-2. The run, cut once by the proxy.
  const proxy = await startProxy(new URL(opts.gateway));
  const runEvents = [];
  try {
    const agent = new Agent({
      url: `http://127.0.0.1:${proxy.port}/agui`,
      threadId,
      initialMessages: [{ id: randomUUID(), role: "user", content: USER_TEXT }],
    });
    try {
      await beforeDeadline(
        agent.runAgent({}, { onEvent: ({ event }) => runEvents.push(event) }),
        deadline,
        "runAgent",
        () => agent.abortRun(),
      );
    } catch (error) {
      errors.push(`run: ${describe(error)}`);
    }
    line.reconnects = agent.reconnects;
    line.lastEventId = agent.lastEventId;
    trace(`${version}: run done, ${runEvents.length} events, ${agent.reconnects} reconnects, last id ${agent.lastEventId}`);
  } finally {
    line.cutConnections = proxy.stats.cut;
    line.proxyConnections = proxy.stats.connections;
    line.cutTail = proxy.stats.cutTail;
    await proxy.close();
  }
  line.types = runEvents.map((event) => event.type);
  const runDeltas = runEvents.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta);
  line.text = runDeltas.join("");

  // 3. connect, straight to the gateway, same thread: the messages the
  // replay restores ("role: content"), then what a second connect of the
  // same agent leaves (the same, once).
  const connectEvents = [];
  const summary = (messages) => messages.map((m) => `${m.role}: ${typeof m.content === "string" ? m.content : ""}`);
  try {
    const agent = new Agent({ url: `${opts.gateway}/agui`, threadId });
    await beforeDeadline(
      agent.connectAgent({}, { onEvent: ({ event }) => connectEvents.push(event) }),
      deadline,
      "connectAgent",
      () => agent.abortRun(),
    );
    line.connectMessages = summary(agent.messages);
    await beforeDeadline(agent.connectAgent({}, {}), deadline, "connectAgent again", () => agent.abortRun());
    line.connectAgain = summary(agent.messages);
  } catch (error) {
    errors.push(`connect: ${describe(error)}`);
  }
  line.connectTypes = connectEvents.map((event) => event.type);

  // 4. connect to a thread without a run: 204, no events, no error.
  const emptyEvents = [];
  try {
    const agent = new Agent({ url: `${opts.gateway}/agui`, threadId: `resume-empty-${randomUUID()}` });
    await beforeDeadline(
      agent.connectAgent({}, { onEvent: ({ event }) => emptyEvents.push(event) }),
      deadline,
      "connectAgent (no run)",
      () => agent.abortRun(),
    );
    line.emptyConnectOk = emptyEvents.length === 0;
  } catch (error) {
    errors.push(`empty connect: ${describe(error)}`);
  }
  line.emptyConnectEvents = emptyEvents.length;

  // 5. abortRun() also stops the run in the gateway: the agent's task is
  // cancelled at once (a dropped connection alone would leave it running).
  try {
    const before = await cancels(deadline);
    const agent = new Agent({
      url: `${opts.gateway}/agui`,
      threadId: `resume-stop-${randomUUID()}`,
      initialMessages: [{ id: randomUUID(), role: "user", content: "count 100 100" }],
    });
    let contents = 0;
    const running = agent
      .runAgent({}, {
        onEvent: ({ event }) => {
          if (event.type === "TEXT_MESSAGE_CONTENT" && ++contents === 3) agent.abortRun();
        },
      })
      .catch(() => {});
    await beforeDeadline(running, deadline, "runAgent (stopped)", () => agent.abortRun());
    const until = Math.min(deadline, Date.now() + 5000);
    while (Date.now() < until && !line.stopCancelled) {
      line.stopCancelled = (await cancels(deadline)) > before;
      if (!line.stopCancelled) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    errors.push(`stop: ${describe(error)}`);
  }

  try {
    line.received = await received(threadId, deadline);
  } catch (error) {
    errors.push(`received: ${describe(error)}`);
  }

  // Late rejections (a reader torn down after the run) show up within a tick or two.
  await new Promise((resolve) => setTimeout(resolve, 100));
  line.unhandledRejections = unhandled.length;
  if (unhandled.length > 0) errors.push(`unhandled rejection: ${unhandled[0].split("\n")[0]}`);
  line.error = errors.length > 0 ? errors.join("; ") : null;
  return line;
}

async function main() {
  for (const spec of CLIENTS) report(await runClient(spec));
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`resume.test: ${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
