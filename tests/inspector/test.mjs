// The inspector page (GET /inspect) in Debian's headless Chromium, driven by
// playwright-core (no browser download): a real run of the demo agent
// renders, checked in the DOM against the same run fetched directly, then a
// second turn of the thread, a client tool's round trip, the JSON error of a
// refused request, a crafted stream (RUN_ERROR, CRLF, comments, multi-line
// data, citations out of range or before their text, markup in the text),
// and the page's SSE parser and JSON Patch on their own. No console error,
// no page error, no CSP violation. The finished demo run's screenshot goes
// to a temporary file (INSPECTOR_SCREENSHOT=docs/screenshots/inspector.png refreshes the committed one).
//
//   node tests/inspector/test.mjs http://127.0.0.1:PORT   (a gateway running `demo`)
//
// Prints "N passed, N failed"; exits 1 on any failure.
import { mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
const base = (process.argv[2] || process.env.INSPECTOR_URL || "").replace(/\/$/, "");
if (!base) {
  console.error("usage: node test.mjs http://127.0.0.1:PORT");
  process.exit(2);
}
// The committed one is refreshed only on request: a test run leaves the tree clean.
const screenshot = process.env.INSPECTOR_SCREENSHOT || join(tmpdir(), `agui-inspector-${process.pid}.png`);
const RUN_TIMEOUT = 30_000;

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
}
function equal(name, actual, expected) {
  const ok = JSON.stringify(actual) === JSON.stringify(expected);
  check(name, ok, ok ? undefined : `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}
let pageUsable = true;
async function scenario(name, body) {
  console.log(`\n# ${name}`);
  if (!pageUsable) {
    check(`${name}: skipped, the page did not load`, false);
    return;
  }
  try {
    await body();
  } catch (err) {
    check(`${name}: ran to the end`, false, err.stack || String(err));
  }
}

/// The frames of one run fetched directly (not through the page).
async function directRun(agent, body) {
  const response = await fetch(`${base}/inspect/agents/${agent}/run`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(RUN_TIMEOUT),
  });
  const text = await response.text();
  const frames = text.split(/\n\n/).filter((f) => f.trim() !== "");
  const a2a = frames.filter((f) => f.startsWith("event: a2a\n"));
  const agui = frames
    .filter((f) => !f.startsWith("event: a2a\n") && /^data: /m.test(f))
    .map((f) => JSON.parse(f.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")));
  return { status: response.status, a2a, agui };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  timeout: 60_000,
});
const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
context.setDefaultTimeout(RUN_TIMEOUT);
const page = await context.newPage();

const consoleErrors = [];
const pageErrors = [];
const expectedHttpErrors = [];
page.on("console", (message) => {
  if (message.type() === "error" || message.type() === "warning" || /Content.Security.Policy/i.test(message.text())) {
    consoleErrors.push(message.text());
  }
});
page.on("pageerror", (err) => pageErrors.push(err.message));
// CSP violations, as the page itself sees them (before any script of its own).
await page.addInitScript(() => {
  window.__csp = [];
  document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
});

const runRequests = [];
page.on("request", (request) => {
  if (request.method() === "POST" && /\/inspect\/agents\/[^/]+\/run$/.test(request.url())) {
    runRequests.push({ url: request.url(), headers: request.headers(), body: JSON.parse(request.postData() || "null") });
  }
});

const q = (selector) => page.locator(selector);
const testid = (id) => `[data-testid="${id}"]`;

/// Sends a message and waits (bounded) until its run has ended and the
/// page is ready for the next one. Returns the run's request.
async function send(message) {
  const turns = await q(testid("assistant-turn")).count();
  const before = runRequests.length;
  await q("#message").fill(message);
  await q("#send").click();
  return awaitRun(turns, before);
}

async function awaitRun(turns, requestsBefore) {
  await page.waitForFunction(
    (n) => {
      const all = document.querySelectorAll('[data-testid="assistant-turn"]');
      const last = all[n];
      return (
        last !== undefined &&
        last.querySelector('[data-testid="outcome"], [data-testid="run-error"]') !== null &&
        !document.getElementById("send").disabled
      );
    },
    turns,
    { timeout: RUN_TIMEOUT },
  );
  return runRequests[requestsBefore];
}

async function setOption(id, value) {
  await page.evaluate(() => {
    document.getElementById("options").open = true;
  });
  await q(`#${id}`).fill(value);
  await page.evaluate(() => {
    document.getElementById("options").open = false;
  });
}

async function newThread() {
  await q("#new-thread").click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="a2a-event"]').length === 0);
}

const text = (selector) => q(selector).textContent();
const texts = (selector) => q(selector).allTextContents();

await scenario("the page loads: its own assets, strict CSP, the agents", async () => {
  const response = await page.goto(`${base}/inspect`, { waitUntil: "load" });
  equal("GET /inspect is 200", response.status(), 200);
  const csp = response.headers()["content-security-policy"] || "";
  check("served with a CSP allowing only its own scripts and styles", csp.includes("script-src 'self'") && csp.includes("style-src 'self'") && csp.includes("default-src 'none'"), csp);
  const html = await response.text();
  check("no inline script or style in the page", !/<script(?![^>]*\bsrc=)[^>]*>/i.test(html) && !/\sstyle=/i.test(html) && !/<style/i.test(html));
  check("no asset from elsewhere (relative URLs only)", !/(src|href)="(https?:)?\/\//i.test(html));
  pageUsable = false;
  await page.waitForSelector(`${testid("agent")} option[value="assistant"]`, { state: "attached", timeout: 10_000 });
  pageUsable = true;
  equal("the agent picker lists the demo agent, chosen", await q(testid("agent")).inputValue(), "assistant");
  equal("status is idle", await q(testid("status")).getAttribute("data-state"), "idle");
  check("a thread id is shown", /^thread-[0-9a-f]{16}$/.test(await text(testid("thread-id"))));
});

let firstRun = null;
await scenario("the demo run renders (Weather in Tokyo?, with shared state)", async () => {
  await setOption("state-input", '{"unit": "celsius"}');
  const request = await send("Weather in Tokyo?");
  firstRun = request;
  equal("status: finished", await text(testid("status")), "finished");
  check("the run went to inspect/agents/assistant/run", request && request.url === `${base}/inspect/agents/assistant/run`, request && request.url);
  equal("the request carries the user message, the state, AG-UI 1.0", [request.body.messages.map((m) => [m.role, m.content]), request.body.state, request.body.protocolVersion], [[["user", "Weather in Tokyo?"]], { unit: "celsius" }, "1.0"]);

  // The same run, fetched directly: the page shows every frame, in order.
  const direct = await directRun("assistant", { ...request.body, threadId: "direct-check", runId: "direct-run" });
  equal("the direct run answers 200", direct.status, 200);
  const a2aRows = q(`${testid("a2a-event")}[data-run="${request.body.runId}"]`);
  equal("A2A column: one row per upstream event (as many as `event: a2a` frames)", await a2aRows.count(), direct.a2a.length);
  check("A2A column: the run had upstream events", direct.a2a.length >= 10, direct.a2a.length);
  const kinds = await a2aRows.evaluateAll((rows) => rows.map((r) => r.dataset.kind));
  equal("A2A column: first a task, last a status update", [kinds[0], kinds[kinds.length - 1]], ["task", "status-update"]);
  check("A2A column: messages and artifact updates in between", kinds.includes("message") && kinds.includes("artifact-update"), kinds);
  const aguiTypes = await q(`${testid("agui-event")}[data-run="${request.body.runId}"]`).evaluateAll((rows) => rows.map((r) => r.dataset.type));
  equal("AG-UI column: the same events, in the same order, as the direct run", aguiTypes, direct.agui.map((e) => e.type));
  equal("AG-UI column: starts with RUN_STARTED, ends with RUN_FINISHED", [aguiTypes[0], aguiTypes[aguiTypes.length - 1]], ["RUN_STARTED", "RUN_FINISHED"]);
  const ids = await q(`${testid("agui-event")}[data-run="${request.body.runId}"] ${testid("event-id")}`).allTextContents();
  check("AG-UI column: every event shows its SSE id (<run key>.<n>, n from 1)", ids.length === aguiTypes.length && ids.every((id, i) => new RegExp(`^[0-9a-f]+\\.${i + 1}$`).test(id)), ids.slice(0, 3));
  const counts = [await text(testid("a2a-count")), await text(testid("agui-count"))];
  equal("column counters", counts, [String(direct.a2a.length), String(direct.agui.length)]);

  // The conversation.
  equal("the user message", await texts(testid("user-message") + " .text"), ["Weather in Tokyo?"]);
  equal("the assistant text, streamed whole", await text(testid("assistant-text")), "It is sunny in Tokyo, 22 °C, with a light breeze.");
  check("the reasoning", (await text(testid("reasoning-text"))) === "The user wants the weather in Tokyo. I will call the weather tool.", await text(testid("reasoning-text")));
  const tool = q(testid("tool-call"));
  equal("one tool call", await tool.count(), 1);
  equal("the tool call's name", await tool.locator(testid("tool-name")).textContent(), "get_weather");
  equal("the tool call's arguments, pretty JSON", await tool.locator(testid("tool-args")).textContent(), '{\n  "city": "Tokyo"\n}');
  equal("the tool call's result", await tool.locator(testid("tool-result")).textContent(), "sunny, 22 °C");
  equal("the tool call is done", await tool.getAttribute("data-state"), "done");
  const citation = q(`${testid("assistant-text")} a${testid("citation")}`);
  equal("one citation link in the text", await citation.count(), 1);
  equal("the citation links over exactly its span (0–20)", await citation.textContent(), "It is sunny in Tokyo");
  equal("the citation's href", await citation.getAttribute("href"), "https://weather.example/today");
  check("the citation's title", ((await citation.getAttribute("title")) || "").includes("Weather service"));
  equal("the citation opens elsewhere, without referrer", [await citation.getAttribute("target"), await citation.getAttribute("rel")], ["_blank", "noopener noreferrer"]);
  equal("the source is listed under the text", await texts(testid("citation-source")), ["Weather service"]);
  equal("the trajectory step", await texts(testid("trajectory-step")), ["Planning Look up the weather, then answer."]);
  equal("the commands", await q(testid("command")).evaluateAll((rows) => rows.map((r) => [r.dataset.command, r.querySelector(".param") && r.querySelector(".param").textContent])), [["SHOW_WEATHER_CARD", "city=Tokyo"]]);
  equal("the shared state: the snapshot, then the JSON Patch applied", JSON.parse(await text(testid("state"))), { unit: "celsius", city: "Tokyo", forecast: "sunny, 22 °C" });
  equal("the task's states", await text(testid("task-state")), "task submitted → working → completed");
  equal("the outcome", await q(testid("outcome")).getAttribute("data-state"), "completed");
  equal("the run's token usage, from RUN_FINISHED.usage", await texts(testid("usage-entry")), ["demo-weather 120 tokens: 96 in, 24 out"]);
  equal("the data part the agent echoed is shown (collapsed)", await q(`${testid("data")} summary`).allTextContents(), ["data · client-metadata"]);
  equal("the state sent next is the state now", JSON.parse(await q("#state-input").inputValue()), { unit: "celsius", city: "Tokyo", forecast: "sunny, 22 °C" });
});

await scenario("an AG-UI event lights up the A2A event it came from", async () => {
  const result = q(`${testid("agui-event")}[data-type="TOOL_CALL_RESULT"]`);
  await result.scrollIntoViewIfNeeded();
  await result.hover();
  const lit = q(`${testid("a2a-event")}.linked`);
  equal("exactly one A2A event lit", await lit.count(), 1);
  equal("it is the A2A event that preceded it", await lit.getAttribute("data-index"), await result.getAttribute("data-a2a"));
  check("it is the agent's tool result message", (await lit.locator("pre").textContent()).includes('"content": "sunny, 22 °C"'));
  const task = q(`${testid("a2a-event")}[data-kind="task"]`).first();
  await task.hover();
  const litOut = await q(`${testid("agui-event")}.linked`).evaluateAll((rows) => rows.map((r) => r.dataset.type));
  equal("an A2A event lights up what it produced", litOut, ["RUN_STARTED", "CUSTOM"]);
  // The screenshot: the finished run, the tool call's events linked.
  await page.mouse.move(700, 5);
  const args = q(`${testid("agui-event")}[data-type="TOOL_CALL_ARGS"]`);
  await args.scrollIntoViewIfNeeded();
  await args.hover();
  await page.evaluate(() => {
    document.getElementById("conversation").scrollTop = 0;
  });
  await page.waitForTimeout(1300); // the state's highlight fades
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot });
  check(`screenshot written (${screenshot})`, statSync(screenshot).size > 10_000);
  await page.mouse.move(700, 5);
});

await scenario("the thread goes on: history, new ids, the API key sent", async () => {
  await q(testid("api-key")).fill("inspector-test-key");
  const request = await send("And in Paris?");
  equal("status: finished", await text(testid("status")), "finished");
  const messages = request.body.messages;
  equal("same thread, a new run id", [request.body.threadId === firstRun.body.threadId, request.body.runId !== firstRun.body.runId], [true, true]);
  equal("the history: user, assistant, user", messages.map((m) => m.role), ["user", "assistant", "user"]);
  equal("the first message keeps its id, the new one has its own", [messages[0].id === firstRun.body.messages[0].id, messages[2].id !== messages[0].id], [true, true]);
  equal("the assistant's text is in the history (not its tool result)", messages[1].content, "It is sunny in Tokyo, 22 °C, with a light breeze.");
  check("no tool message sent back", !messages.some((m) => m.role === "tool"));
  equal("the state sent is the state the last run left", request.body.state, { unit: "celsius", city: "Tokyo", forecast: "sunny, 22 °C" });
  equal("the API key goes as a bearer token", request.headers.authorization, "Bearer inspector-test-key");
  const stored = await page.evaluate(() => [localStorage.length, sessionStorage.length, location.href]);
  equal("the API key is kept nowhere else (storage, URL)", stored, [0, 0, `${base}/inspect`]);
  equal("the second answer", (await texts(testid("assistant-text")))[1], "It is sunny in Paris, 22 °C, with a light breeze.");
  equal("two user messages", await q(testid("user-message")).count(), 2);
  equal("the state follows", JSON.parse(await text(testid("state"))).city, "Paris");
  equal("each run has its separator in both columns", await q(`#a2a-list .run-sep, #agui-list .run-sep`).count(), 4);
  await q(testid("api-key")).fill("");
});

await scenario("a client tool: the run waits, the result goes back, the agent answers", async () => {
  await newThread();
  equal("a new thread starts empty", [await q(testid("assistant-turn")).count(), await text(testid("state"))], [0, "{}"]);
  await setOption("tools-input", JSON.stringify([{ name: "get_weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } } } }]));
  await send("Weather in Oslo?");
  equal("status: finished", await text(testid("status")), "finished");
  equal("the agent's text", await text(testid("assistant-text")), "Asking your get_weather tool about Oslo.");
  const tool = q(testid("tool-call"));
  equal("the client tool's call waits for its result", await tool.getAttribute("data-state"), "pending");
  check("the outcome says so", (await text(testid("outcome"))).includes("waiting for the client's tool result"));
  const callId = await tool.getAttribute("data-tool-call-id");
  const turns = await q(testid("assistant-turn")).count();
  const before = runRequests.length;
  await q(testid("tool-result-input")).fill("rainy, 9 °C");
  await q(testid("tool-result-send")).click();
  const request = await awaitRun(turns, before);
  const messages = request.body.messages;
  equal("the history: user, assistant with the call, the tool's result", messages.map((m) => m.role), ["user", "assistant", "tool"]);
  equal("the call is on the assistant message", messages[1].toolCalls && messages[1].toolCalls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]), [[callId, "get_weather", { city: "Oslo" }]]);
  equal("the result names the call", [messages[2].toolCallId, messages[2].content], [callId, "rainy, 9 °C"]);
  equal("the agent answers from the result", (await texts(testid("assistant-text")))[1], "Your tool says: rainy, 9 °C");
  equal("status: finished", await text(testid("status")), "finished");
  await setOption("tools-input", "[]");
});

await scenario("a refused request shows the gateway's JSON error", async () => {
  await newThread();
  await page.evaluate(() => {
    const option = document.createElement("option");
    option.value = "no-such-agent";
    option.textContent = "no-such-agent";
    document.getElementById("agent").append(option);
  });
  await q(testid("agent")).selectOption("no-such-agent");
  expectedHttpErrors.push(404);
  await send("hello");
  equal("status: error: UNKNOWN_AGENT", await text(testid("status")), "error: UNKNOWN_AGENT");
  equal("the error block carries the code", await q(testid("run-error")).getAttribute("data-code"), "UNKNOWN_AGENT");
  check("and the message", (await text(testid("run-error-message"))).includes('no agent named "no-such-agent"'));
  check("and the JSON", (await text(`${testid("run-error")} pre`)).includes('"side": "client"'));
  equal("the AG-UI column shows the HTTP answer", await q(testid("http-error")).getAttribute("data-status"), "404");
  await q(testid("agent")).selectOption("assistant");
});

await scenario("a crafted stream: RUN_ERROR, CRLF, comments, multi-line data, odd citations", async () => {
  await newThread();
  const crlf = (frame) => frame.replace(/\n/g, "\r\n");
  const body = [
    ": ping\n\n",
    crlf('event: a2a\ndata: {"jsonrpc": "2.0",\ndata:  "result": {"kind": "status-update", "taskId": "t", "contextId": "c",\ndata:   "status": {"state": "working"}, "final": false}}\n\n'),
    crlf('id: k.1\ndata: {"type":"RUN_STARTED","threadId":"x","runId":"y"}\n\n'),
    crlf(': keep-alive\n\n'),
    'id: k.2\rdata: {"type":"CUSTOM","name":"a2a.citation","value":{"url":"https://example.org/a","title":"A","startIndex":6,"endIndex":11,"messageId":"m1"}}\r\r',
    'id: k.3\ndata: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n',
    'id: k.4\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hello "}\n\n',
    'id: k.5\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"wörld ☀️ <img src=x> and more"}\n\n',
    'id: k.6\ndata: {"type":"CUSTOM","name":"a2a.citation","value":{"url":"https://example.org/b","title":"B","startIndex":5,"endIndex":500,"messageId":"m1"}}\n\n',
    'id: k.7\ndata: {"type":"CUSTOM","name":"a2a.citation","value":{"url":"javascript:alert(1)","title":"C","startIndex":0,"endIndex":5,"messageId":"m1"}}\n\n',
    'id: k.8\ndata: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n',
    'id: k.9\ndata: {"type":"STATE_SNAPSHOT","snapshot":{"a":[1,2]}}\n\n',
    'id: k.10\ndata: {"type":"STATE_DELTA","delta":[{"op":"add","path":"/a/-","value":3},{"op":"replace","path":"/b","value":1}]}\n\n',
    'id: k.11\ndata: {"type":"STATE_DELTA","delta":[{"op":"add","path":"/a/-","value":3},{"op":"remove","path":"/a/0"}]}\n\n',
    "event: a2a\ndata: not json <b>at all</b>\n\n",
    'id: k.12\ndata: {"type":"RUN_ERROR","message":"The agent failed: <b>boom</b>","code":"A2A_TASK_FAILED"}\n\n',
  ].join("");
  await page.route("**/inspect/agents/assistant/run", (route) =>
    route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body }),
  );
  try {
    await send("crafted");
  } finally {
    await page.unroute("**/inspect/agents/assistant/run");
  }
  equal("status: error: A2A_TASK_FAILED", await text(testid("status")), "error: A2A_TASK_FAILED");
  equal("RUN_ERROR in red with code and message (as text)", [await q(testid("run-error")).getAttribute("data-code"), await text(testid("run-error-message"))], ["A2A_TASK_FAILED", " The agent failed: <b>boom</b>"]);
  equal("no markup from the stream became elements", await page.evaluate(() => document.querySelectorAll("#conversation b, #conversation img, #a2a-list b, #agui-list b").length), 0);
  equal("A2A frames: the multi-line JSON and the one that is not JSON", await q(testid("a2a-event")).evaluateAll((rows) => rows.map((r) => r.dataset.kind)), ["status-update", "not-json"]);
  equal("AG-UI frames: every frame, comments skipped", await q(testid("agui-event")).evaluateAll((rows) => rows.map((r) => r.dataset.type)), ["RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "CUSTOM", "CUSTOM", "TEXT_MESSAGE_END", "STATE_SNAPSHOT", "STATE_DELTA", "STATE_DELTA", "RUN_ERROR"]);
  equal("the text, with its markup as text", await text(testid("assistant-text")), "Hello wörld ☀️ <img src=x> and more");
  const links = q(`${testid("assistant-text")} a${testid("citation")}`);
  equal("the citation that came before its text links over its span (code points)", [await links.count(), await links.textContent(), await links.getAttribute("href")], [1, "wörld", "https://example.org/a"]);
  equal("a javascript: citation is no link", [await q(`${testid("assistant-text")} span${testid("citation")}`).textContent(), await page.evaluate(() => document.querySelectorAll('a[href^="javascript"]').length)], ["Hello", 0]);
  check("a span past the text is listed, not linked", (await texts(testid("citation-note"))).some((n) => n.includes("5–500 is past the text")), await texts(testid("citation-note")));
  check("a patch that does not apply is reported", (await text(testid("state-error"))).includes("did not apply"));
  equal("the state: the failed patch changed nothing, the next one applied", JSON.parse(await text(testid("state"))), { a: [2, 3] });
});

await scenario("the page's SSE parser and JSON Patch", async () => {
  const result = await page.evaluate(() => {
    const { SseParser, applyPatch } = window.aguiInspector;
    const stream = ': hi\r\n\r\nevent: a2a\r\ndata: {"a":\r\ndata: 1}\r\n\r\nid: r.1\rdata: é☀️\r\rdata:no-space\n\ndata\n\nretry: 5\nid: r.2\ndata: x\n\n: bye\n\nevent: e\n\ndata: cut';
    const parse = (chunks) => {
      const frames = [];
      const parser = new SseParser((f) => frames.push(f));
      for (const chunk of chunks) parser.feed(chunk);
      parser.end();
      return JSON.stringify(frames);
    };
    const whole = parse([stream]);
    let splits = 0;
    let bad = [];
    for (let i = 0; i <= stream.length; i++) {
      for (const j of [i, i + 1, i + 3]) {
        if (j > stream.length) continue;
        splits += 1;
        if (parse([stream.slice(0, i), stream.slice(i, j), stream.slice(j)]) !== whole) bad.push([i, j]);
      }
    }
    // Bytes split anywhere, UTF-8 decoded as a stream (the page's reader).
    const bytes = new TextEncoder().encode(stream);
    for (let i = 1; i < bytes.length; i++) {
      const decoder = new TextDecoder();
      const got = parse([decoder.decode(bytes.slice(0, i), { stream: true }), decoder.decode(bytes.slice(i), { stream: true }), decoder.decode()]);
      if (got !== whole) bad.push(["byte", i]);
    }
    const patches = {};
    const doc = { a: { "b/c": 1, "d~e": [1, 2] }, k: "v" };
    patches.escapes = applyPatch(doc, [{ op: "replace", path: "/a/b~1c", value: 2 }, { op: "add", path: "/a/d~0e/1", value: 9 }]);
    patches.moveCopy = applyPatch(doc, [{ op: "move", from: "/k", path: "/m" }, { op: "copy", from: "/m", path: "/n" }, { op: "test", path: "/n", value: "v" }]);
    patches.root = applyPatch(doc, [{ op: "replace", path: "", value: [1] }]);
    const throws = (ops) => {
      try {
        applyPatch(doc, ops);
        return false;
      } catch {
        return true;
      }
    };
    patches.refused = [
      throws([{ op: "test", path: "/k", value: "w" }]),
      throws([{ op: "remove", path: "/nope" }]),
      throws([{ op: "add", path: "/a/d~0e/7", value: 1 }]),
      throws([{ op: "add", path: "no-slash", value: 1 }]),
      throws({ op: "add" }),
    ];
    patches.untouched = doc;
    return { whole: JSON.parse(whole), splits, bad: bad.slice(0, 5), patches };
  });
  equal("frames of the stream", result.whole, [
    { event: "a2a", data: '{"a":\n1}', id: null },
    { event: "message", data: "é☀️", id: "r.1" },
    { event: "message", data: "no-space", id: null },
    { event: "message", data: "", id: null },
    { event: "message", data: "x", id: "r.2" },
  ]);
  check(`the same frames however the text is split (${result.splits} splits and every byte)`, result.bad.length === 0, result.bad);
  equal("patch: ~1 and ~0 escapes, array insert", result.patches.escapes, { a: { "b/c": 2, "d~e": [1, 9, 2] }, k: "v" });
  equal("patch: move, copy, test", result.patches.moveCopy, { a: { "b/c": 1, "d~e": [1, 2] }, m: "v", n: "v" });
  equal("patch: the whole document", result.patches.root, [1]);
  equal("patch: failing tests, missing paths, bad indexes, bad pointers refused", result.patches.refused, [true, true, true, true, true]);
  equal("patch: the original never changes", result.patches.untouched, { a: { "b/c": 1, "d~e": [1, 2] }, k: "v" });
});

await scenario("no console error, no page error, no CSP violation", async () => {
  const csp = await page.evaluate(() => window.__csp);
  equal("no CSP violation", csp, []);
  equal("no page error", pageErrors, []);
  // Chromium logs each 4xx answer as "Failed to load resource"; the refused
  // run's 404 is one the test asked for.
  const unexpected = consoleErrors.filter((m) => {
    const expected = expectedHttpErrors.find((status) => m.includes(`status of ${status}`) && m.includes("Failed to load resource"));
    if (expected !== undefined) expectedHttpErrors.splice(expectedHttpErrors.indexOf(expected), 1);
    return expected === undefined;
  });
  equal("no console error or warning", unexpected, []);
});

await browser.close();
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
