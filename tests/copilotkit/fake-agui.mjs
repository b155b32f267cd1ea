#!/usr/bin/env node
// A tiny stand-in for the gateway's `POST /agui`, for developing roundtrip.mjs
// without the Rust build. It answers the way the gateway answers a frontend
// tool scenario:
//
//   last message is a user message        -> RUN_STARTED, TOOL_CALL_START
//                                            (get_weather), TOOL_CALL_ARGS
//                                            {"city":"Paris"}, TOOL_CALL_END,
//                                            RUN_FINISHED
//   messages after the last assistant     -> RUN_STARTED, one text message
//   message are all tool messages            "The tool said: <content>",
//                                            RUN_FINISHED
//   anything else                         -> RUN_STARTED, RUN_ERROR
//
// Usage: node fake-agui.mjs [--verbose] [--loop | --repeat-id | --bad-args] [--exit-on-stdin-close]
//   Listens on 127.0.0.1 on a free port and prints `READY <port>` on stdout.
//   --verbose  writes every RunAgentInput it receives to stderr (one JSON line).
//   Misbehaviours, to check that the harness notices them:
//   --loop       always answers with a tool call (never stops calling the tool);
//   --repeat-id  uses the same toolCallId for every tool call;
//   --bad-args   streams tool-call arguments that are not JSON.
//   --exit-on-stdin-close  exits when stdin reaches its end, so a parent that
//              holds the other end of a pipe never leaves this process behind.
// Otherwise it runs until SIGTERM/SIGINT.

import http from "node:http";
import { randomUUID } from "node:crypto";

const argv = process.argv.slice(2);
for (const arg of argv) {
    if (!["--verbose", "--loop", "--repeat-id", "--bad-args", "--exit-on-stdin-close"].includes(arg)) {
        process.stderr.write(`fake-agui: unknown argument ${arg}\n`);
        process.exit(2);
    }
}
const verbose = argv.includes("--verbose");
const loop = argv.includes("--loop");
const repeatId = argv.includes("--repeat-id");
const badArgs = argv.includes("--bad-args");
let requestCount = 0;

/** The events of one run, chosen from the input as described above. */
function eventsFor(input) {
    const threadId = input.threadId;
    const runId = input.runId;
    const messages = Array.isArray(input.messages) ? input.messages : [];
    const started = { type: "RUN_STARTED", threadId, runId };
    const finished = { type: "RUN_FINISHED", threadId, runId };

    const last = messages[messages.length - 1];
    let lastAssistant = -1;
    messages.forEach((m, i) => {
        if (m.role === "assistant") lastAssistant = i;
    });
    const tail = messages.slice(lastAssistant + 1);
    const toolTail = lastAssistant >= 0 && tail.length > 0 && tail.every((m) => m.role === "tool");

    if (loop || last?.role === "user") {
        const toolCallId = repeatId ? "call-weather~same" : `call-weather~${randomUUID().slice(0, 8)}`;
        return [
            started,
            {
                type: "TOOL_CALL_START",
                toolCallId,
                toolCallName: "get_weather",
                parentMessageId: randomUUID(),
            },
            { type: "TOOL_CALL_ARGS", toolCallId, delta: badArgs ? '{"city":"Par' : '{"city":"Paris"}' },
            { type: "TOOL_CALL_END", toolCallId },
            finished,
        ];
    }
    if (toolTail) {
        const messageId = randomUUID();
        const said = tail.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n");
        return [
            started,
            { type: "TEXT_MESSAGE_START", messageId, role: "assistant" },
            { type: "TEXT_MESSAGE_CONTENT", messageId, delta: `The tool said: ${said}` },
            { type: "TEXT_MESSAGE_END", messageId },
            finished,
        ];
    }
    return [
        started,
        {
            type: "RUN_ERROR",
            message: `fake-agui: no rule for an input whose last message is ${last ? `a ${last.role} message` : "missing"}`,
        },
    ];
}

const server = http.createServer((req, res) => {
    if (req.method !== "POST") {
        res.writeHead(405, { Allow: "POST" }).end();
        return;
    }
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
        requestCount += 1;
        let input;
        try {
            input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch (e) {
            res.writeHead(400, { "Content-Type": "text/plain" }).end(`bad JSON: ${e.message}\n`);
            return;
        }
        if (verbose) {
            process.stderr.write(`fake-agui: request ${requestCount} ${req.method} ${req.url} RunAgentInput ${JSON.stringify(input)}\n`);
        }
        res.writeHead(200, {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            Connection: "keep-alive",
        });
        for (const event of eventsFor(input)) res.write(`data: ${JSON.stringify(event)}\n\n`);
        res.end();
    });
});

server.listen(0, "127.0.0.1", () => {
    process.stdout.write(`READY ${server.address().port}\n`);
});

if (argv.includes("--exit-on-stdin-close")) {
    process.stdin.on("end", () => process.exit(0));
    process.stdin.resume();
}

for (const sig of ["SIGTERM", "SIGINT"]) {
    process.on(sig, () => {
        server.close();
        process.exit(0);
    });
}
