#!/usr/bin/env node
// A2UI parity with the official bridge. For a golden case whose input holds
// A2UI parts, the gateway's ACTIVITY events (expected.agui.sse) and the
// ones @ag-ui/a2a 0.0.6 builds from the same A2A input
// (convertA2AEventToAGUIEvents, with a surface tracker as its A2AAgent
// uses) are each applied by @ag-ui/client 1.0.0's own reducer
// (defaultApplyEvents); the resulting `activity` messages must be equal.
//
//   node a2ui-parity.mjs GOLDEN_CASE_DIR...
//
// The bridge reads A2UI v0.8 only (beginRendering, surfaceUpdate,
// dataModelUpdate, one message per part). For surfaces it does not build
// (v0.9 messages, arrays), the gateway's activity must hold the same shape,
// `{operations: [each A2UI message for that surface, in order]}`, taken
// straight from the input. Prints one line per case and "N passed, M
// failed"; exits 1 when anything failed.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { from, lastValueFrom, toArray } from "rxjs";
import { HttpAgent, defaultApplyEvents } from "@ag-ui/client";
import { convertA2AEventToAGUIEvents } from "@ag-ui/a2a";

const A2UI_KEYS = [
  "beginRendering", "surfaceUpdate", "dataModelUpdate",
  "createSurface", "updateComponents", "updateDataModel", "deleteSurface",
];

function inputItems(dir) {
  return readFileSync(join(dir, "input.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line))
    .map((item) => item.result ?? item);
}

function ourEvents(dir) {
  return readFileSync(join(dir, "expected.agui.sse"), "utf8")
    .split("\n\n")
    .filter((frame) => frame.startsWith("data: "))
    .map((frame) => JSON.parse(frame.slice(6)));
}

function bridgeEvents(items) {
  const seen = new Set();
  const surfaceTracker = { has: (id) => seen.has(id), add: (id) => seen.add(id) };
  const text = new Map();
  return items.flatMap((item) =>
    convertA2AEventToAGUIEvents(item, {
      role: "assistant",
      messageIdMap: new Map(),
      surfaceTracker,
      getCurrentText: (id) => text.get(id),
      onTextDelta: ({ messageId, delta }) => text.set(messageId, (text.get(messageId) ?? "") + delta),
      source: "a2a",
    }),
  );
}

// The activity messages @ag-ui/client 1.0.0 builds from these events.
async function activities(events) {
  const input = { threadId: "t", runId: "r", messages: [], state: {}, tools: [], context: [], forwardedProps: {} };
  const agent = new HttpAgent({ url: "http://parity.invalid/", threadId: "t" });
  const only = events.filter((e) => e.type === "ACTIVITY_SNAPSHOT" || e.type === "ACTIVITY_DELTA");
  const mutations = await lastValueFrom(defaultApplyEvents(input, from(only), agent, []).pipe(toArray()));
  const messages = mutations.filter((m) => m.messages).at(-1)?.messages ?? [];
  return new Map(
    messages
      .filter((m) => m.role === "activity")
      .map((m) => [m.id, { activityType: m.activityType, content: m.content }]),
  );
}

// Every A2UI message of the input, by surface, in order.
function inputOperations(items) {
  const bySurface = new Map();
  const visit = (data) => {
    for (const message of Array.isArray(data) ? data : [data]) {
      const key = A2UI_KEYS.find((k) => message?.[k]?.surfaceId);
      if (!key) continue;
      const id = message[key].surfaceId;
      bySurface.set(id, [...(bySurface.get(id) ?? []), message]);
    }
  };
  for (const item of items) {
    const parts = item.status?.message?.parts ?? item.parts ?? item.artifact?.parts ?? [];
    for (const part of parts) if (part.data !== undefined) visit(part.data);
  }
  return bySurface;
}

async function check(dir) {
  const items = inputItems(dir);
  const ours = await activities(ourEvents(dir));
  const theirs = await activities(bridgeEvents(items));
  const expected = inputOperations(items);
  if (expected.size === 0) throw new Error("the input holds no A2UI message");
  if (ours.size !== expected.size) throw new Error(`${ours.size} activity messages for ${expected.size} surfaces`);
  const notes = [];
  for (const [surface, operations] of expected) {
    const mine = ours.get(surface);
    if (!mine) throw new Error(`no activity message for surface ${surface}`);
    const reference = theirs.get(surface);
    if (reference) {
      if (!isDeepStrictEqual(mine, reference)) {
        throw new Error(`surface ${surface}: ${JSON.stringify(mine)} != @ag-ui/a2a's ${JSON.stringify(reference)}`);
      }
      notes.push(`${surface}: equal to @ag-ui/a2a`);
    } else {
      const shape = { activityType: "a2ui-surface", content: { operations } };
      if (!isDeepStrictEqual(mine, shape)) {
        throw new Error(`surface ${surface}: ${JSON.stringify(mine)} is not ${JSON.stringify(shape)}`);
      }
      notes.push(`${surface}: @ag-ui/a2a builds none (v0.9); same shape as its v0.8 surfaces`);
    }
  }
  return notes.join("; ");
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  process.stderr.write("usage: node a2ui-parity.mjs GOLDEN_CASE_DIR...\n");
  process.exit(2);
}
let passed = 0;
let failed = 0;
for (const dir of dirs) {
  try {
    const note = await check(dir);
    passed++;
    console.log(`ok ${dir} (${note})`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${dir}: ${err.message}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
