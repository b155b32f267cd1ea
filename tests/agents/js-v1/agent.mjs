#!/usr/bin/env node
// Scenario test agent on @a2a-js/sdk 1.3.0 + express (A2A 1.0, with legacyCompat for 0.3).
//
//   GET  /.well-known/agent-card.json   1.0 card with `A2A-Version: 1.0`, 0.3 card without (Vary: A2A-Version)
//   POST /a2a/jsonrpc                   JSON-RPC 1.0 (A2A-Version: 1.0) and 0.3 (message/stream, ...)
//   POST /a2a/rest/message:stream       HTTP+JSON 1.0
//   POST /a2a/rest/v1/message:stream    HTTP+JSON 0.3 (legacyCompat)
//
// Run: node agent.mjs [--host 127.0.0.1] [--port 0]   -> prints "READY <port>".
// Plays the same scenarios as the Python agents: ../scenarios.json (see ../README.md).
// DELAY_MS sets the pause between events (default 20).

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const HERE = dirname(fileURLToPath(import.meta.url));
const SCENARIOS_FILE = process.env.SCENARIOS_FILE || join(HERE, '..', 'scenarios.json');

const EXTENSIONS = [
  ['https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol',
    'Alibaba Model Studio multimodal interaction: request metadata, commands on the last artifact'],
  ['https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1', 'Agent Stack citations in message metadata'],
  ['https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1', 'Agent Stack trajectory steps in message metadata'],
];

const STATES = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  rejected: TaskState.TASK_STATE_REJECTED,
  canceled: TaskState.TASK_STATE_CANCELED,
};
const FINAL_STATES = new Set(['completed', 'failed', 'rejected', 'canceled', 'input-required', 'auth-required']);
const STEP_KINDS = ['status', 'artifact', 'message', 'pause', 'drip', 'ticks', 'big'];
const TOKEN_TRIM = /^[.,;!?"'()[\]{}<>`]+|[.,;!?"'()[\]{}<>`]+$/g;

// ------------------------------------------------------------- scenarios --
// Same rules as ../scenario_engine.py; keep the two in step.

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function delayMs() {
  const raw = (process.env.DELAY_MS ?? '').trim();
  const n = Number(raw);
  return raw !== '' && Number.isFinite(n) && n >= 0 ? n : 20;
}

function stepKind(step) {
  const kind = STEP_KINDS.find((k) => k in step);
  if (!kind) throw new Error(`unknown step ${JSON.stringify(step)}`);
  return kind;
}

function substitute(value, needle, replacement) {
  if (typeof value === 'string') return value.split(needle).join(replacement);
  if (Array.isArray(value)) return value.map((v) => substitute(v, needle, replacement));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, needle, replacement)]));
  }
  return value;
}

function numArg(arg, fallback) {
  if (arg === null || arg === undefined || arg === '') return fallback;
  const n = Number(arg);
  return Number.isFinite(n) ? n : fallback;
}

class Catalog {
  constructor(file) {
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    this.default = doc.default;
    this.scenarios = new Map(doc.scenarios.map((s) => [s.name, s]));
    if (!this.scenarios.has(this.default)) throw new Error(`default scenario ${this.default} is not defined`);
  }

  pick(text) {
    for (const raw of text.split(/\s+/)) {
      const token = raw.replace(TOKEN_TRIM, '').toLowerCase();
      const colon = token.indexOf(':');
      const name = colon >= 0 ? token.slice(0, colon) : token;
      if (this.scenarios.has(name)) return [this.scenarios.get(name), colon >= 0 ? token.slice(colon + 1) : null];
    }
    return [this.scenarios.get(this.default), null];
  }

  plan(userText, userMetadata, followUpOf) {
    let steps; let name; let arg = null;
    if (followUpOf && this.scenarios.get(followUpOf)?.followUp) {
      steps = substitute(this.scenarios.get(followUpOf).followUp, '{input}', userText.trim());
      name = `${followUpOf}/followUp`;
    } else {
      let scenario;
      [scenario, arg] = this.pick(userText);
      steps = structuredClone(scenario.steps);
      name = scenario.name;
    }
    const last = steps[steps.length - 1];
    if (userMetadata && Object.keys(userMetadata).length > 0 && last && stepKind(last) === 'status'
        && FINAL_STATES.has(last.status)) {
      steps.splice(steps.length - 1, 0, {
        artifact: { artifactId: 'echo-metadata', name: 'echo-metadata', parts: [{ data: { metadata: userMetadata } }] },
        lastChunk: true,
      });
    }
    return { name, steps, arg, messageOnly: steps.length > 0 && stepKind(steps[0]) === 'message' };
  }
}

function statusMessage(step) {
  if ('message' in step) return step.message;
  if ('text' in step) return { parts: [{ text: step.text }] };
  return null;
}

async function play(plan, em) {
  const delay = delayMs();
  for (const step of plan.steps) {
    if (em.canceled()) return;
    if (delay) await sleep(delay);
    switch (stepKind(step)) {
      case 'status':
        em.status(step.status, statusMessage(step), step.metadata);
        break;
      case 'artifact':
        em.artifact(step.artifact, step.append, step.lastChunk);
        break;
      case 'message':
        em.message(step.message);
        break;
      case 'pause':
        await sleep(numArg(plan.arg, step.pause.defaultSeconds) * 1000);
        break;
      case 'drip': {
        const s = step.drip;
        for (let i = 0; i < s.count; i++) {
          if (i) await sleep(s.intervalMs);
          if (em.canceled()) return;
          em.artifact({ artifactId: s.artifactId, name: s.name, parts: [{ text: String(Date.now()) }] },
            i > 0, i === s.count - 1);
        }
        break;
      }
      case 'ticks': {
        const s = step.ticks;
        const deadline = Date.now() + s.maxSeconds * 1000;
        let i = 0;
        while (Date.now() < deadline) {
          if (em.canceled()) return;
          em.artifact({ artifactId: s.artifactId, name: s.name, parts: [{ text: `tick ${i} ` }] }, i > 0, false);
          i += 1;
          await sleep(s.intervalMs);
        }
        if (em.canceled()) return;
        em.artifact({ artifactId: s.artifactId, name: s.name, parts: [{ text: 'end' }] }, i > 0, true);
        break;
      }
      case 'big': {
        const s = step.big;
        const size = Math.max(0, Math.trunc(numArg(plan.arg, s.defaultBytes)));
        em.artifact({ artifactId: s.artifactId, name: s.name, parts: [{ text: 'x'.repeat(size) }] }, false, true);
        break;
      }
      default:
        throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
  }
}

// ------------------------------------------------------------------ SDK --
// The SDK's internal types are ts-proto: a Part's content is a {$case, value} union.

function toPart(spec) {
  let content;
  if ('text' in spec) content = { $case: 'text', value: spec.text };
  else if ('data' in spec) content = { $case: 'data', value: spec.data };
  else if ('url' in spec) content = { $case: 'url', value: spec.url };
  else throw new Error(`unsupported part ${JSON.stringify(spec)}`);
  return { content, metadata: spec.metadata ?? {}, filename: spec.filename ?? '', mediaType: spec.mediaType ?? '' };
}

class SdkEmitter {
  constructor(bus, taskId, contextId, canceledSet) {
    Object.assign(this, { bus, taskId, contextId, canceledSet });
  }

  toMessage(spec, withTask = true) {
    return {
      messageId: randomUUID(), role: Role.ROLE_AGENT, contextId: this.contextId,
      taskId: withTask ? this.taskId : '', parts: (spec.parts ?? []).map(toPart),
      metadata: spec.metadata ?? {}, extensions: [], referenceTaskIds: [],
    };
  }

  status(state, message, metadata) {
    this.bus.publish(AgentEvent.statusUpdate({
      taskId: this.taskId, contextId: this.contextId, metadata: metadata ?? {},
      status: { state: STATES[state], timestamp: new Date().toISOString(),
        message: message ? this.toMessage(message) : undefined },
    }));
  }

  artifact(artifact, append, lastChunk) {
    this.bus.publish(AgentEvent.artifactUpdate({
      taskId: this.taskId, contextId: this.contextId, metadata: {},
      append: append ?? false, lastChunk: lastChunk ?? false,
      artifact: { artifactId: artifact.artifactId, name: artifact.name ?? '', description: '',
        parts: artifact.parts.map(toPart), metadata: artifact.metadata ?? {}, extensions: [] },
    }));
  }

  message(message) {
    this.bus.publish(AgentEvent.message(this.toMessage(message, false)));
  }

  canceled() {
    return this.canceledSet.has(this.taskId);
  }
}

class ScenarioExecutor {
  catalog = new Catalog(SCENARIOS_FILE);
  waiting = new Map(); // task id -> scenario waiting for a follow-up turn
  contexts = new Map(); // task id -> context id, for cancelTask
  canceledSet = new Set();

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const userMessage = ctx.userMessage;
    const userText = (userMessage.parts ?? [])
      .filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('\n');
    const userMetadata = userMessage.metadata ?? {};
    let followUpOf = null;
    if (ctx.task && ctx.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      followUpOf = this.waiting.get(taskId) ?? null;
      this.waiting.delete(taskId);
    }
    const plan = this.catalog.plan(userText, userMetadata, followUpOf);
    const em = new SdkEmitter(bus, taskId, contextId, this.canceledSet);
    this.contexts.set(taskId, contextId);
    try {
      if (!plan.messageOnly) {
        // Every task turn opens with the Task, follow-ups included (the SDK enforces it).
        bus.publish(AgentEvent.task(ctx.task ?? {
          id: taskId, contextId, artifacts: [], history: [userMessage], metadata: {},
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString() },
        }));
      }
      await play(plan, em);
      const last = plan.steps[plan.steps.length - 1];
      if (last?.status === 'input-required') this.waiting.set(taskId, plan.name);
    } finally {
      // Ends the stream; AUTH_REQUIRED alone would leave it open in this SDK.
      bus.finished();
    }
  }

  async cancelTask(taskId, bus) {
    this.canceledSet.add(taskId);
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId: this.contexts.get(taskId) ?? '', metadata: {},
      status: { state: TaskState.TASK_STATE_CANCELED, timestamp: new Date().toISOString(), message: undefined },
    }));
  }
}

function buildCard(host, port) {
  const base = `http://${host}:${port}`;
  const iface = (binding, path, version) => ({ url: `${base}${path}`, protocolBinding: binding, tenant: '', protocolVersion: version });
  return {
    name: 'agui-gateway test agent (@a2a-js/sdk 1.3.0)',
    description: 'Plays the scripted scenarios of tests/agents/scenarios.json over A2A 1.0 and 0.3.',
    version: '1.0.0',
    supportedInterfaces: [
      iface('JSONRPC', '/a2a/jsonrpc', '1.0'), iface('JSONRPC', '/a2a/jsonrpc', '0.3'),
      iface('HTTP+JSON', '/a2a/rest', '1.0'), iface('HTTP+JSON', '/a2a/rest', '0.3'),
    ],
    capabilities: {
      streaming: true, pushNotifications: false, extendedAgentCard: false,
      extensions: EXTENSIONS.map(([uri, description]) => ({ uri, description, required: false, params: undefined })),
    },
    securitySchemes: {}, securityRequirements: [],
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'scenarios', name: 'Scenarios', description: 'Picks a scripted scenario by a magic word in the text.',
      tags: ['test'], examples: ['chunks', 'input-required', 'slow:5'], inputModes: [], outputModes: [], securityRequirements: [] }],
    documentationUrl: '', signatures: [],
  };
}

function buildApp(host, port) {
  const handler = new DefaultRequestHandler(buildCard(host, port), new InMemoryTaskStore(), new ScenarioExecutor());
  const legacyCompat = { enabled: true };
  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  return app;
}

function main() {
  const { values } = parseArgs({
    options: { host: { type: 'string', default: process.env.HOST || '127.0.0.1' },
      port: { type: 'string', default: process.env.PORT || '0' } },
  });
  const host = values.host;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad --port ${values.port}`);
  const server = http.createServer();
  server.listen(port, host, () => {
    const actual = server.address().port;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    server.on('request', buildApp(urlHost, actual)); // built now, so the card knows the real port
    process.stdout.write(`READY ${actual}\n`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections(); // open SSE streams would otherwise hold close() forever
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
