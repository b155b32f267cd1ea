// A chat page on @ag-ui/client 1.0.0's HttpAgent, talking to agui-gateway
// straight from the browser (no server of its own in between).
//
// Query parameters:
//   gateway      the gateway's base URL (default http://localhost:8080)
//   agent        the agent's name: posts to <gateway>/v1/agents/<agent>/agui
//                (default "assistant", the demo's); empty: <gateway>/agui,
//                the default agent
//   credentials  the fetch credentials mode (default "include": cookies and
//                HTTP authentication go with the request, which the gateway
//                allows only with --cors-credentials)
//
// Everything the page shows comes from the subscriber's event handlers
// below: text as it streams, reasoning, tool calls with their results, and
// the gateway's CUSTOM events a2a.trajectory, a2a.citation, a2a.commands and
// a2a.status (docs/mapping.md has every CUSTOM name and its value).

import { HttpAgent, randomUUID } from "@ag-ui/client";

const params = new URLSearchParams(location.search);
const gateway = (params.get("gateway") ?? "http://localhost:8080").replace(/\/+$/, "");
const agentName = params.get("agent") ?? "assistant";
const credentials = params.get("credentials") ?? "include";
const aguiUrl = agentName ? `${gateway}/v1/agents/${encodeURIComponent(agentName)}/agui` : `${gateway}/agui`;

// HttpAgent builds each request in requestInit(); the override adds the
// credentials mode. (Passing `fetch: (url, init) => fetch(url, { ...init,
// credentials: "include" })` to the constructor does the same.)
class CredentialedHttpAgent extends HttpAgent {
    requestInit(input) {
        return { ...super.requestInit(input), credentials };
    }
}

const agent = new CredentialedHttpAgent({
    url: aguiUrl,
    // Headers for every request, e.g. { Authorization: `Bearer ${token}` }
    // when the gateway checks API keys or JWTs ([auth]).
    headers: {},
    // The default fetch, recording what was sent for the side panel.
    fetch: (url, init) => {
        showRequest(url, init);
        return fetch(url, init);
    },
});

// ---- the page -------------------------------------------------------------

const $ = (selector) => document.querySelector(selector);
const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
};

$("#agent-url").textContent = aguiUrl;
$("#credentials-mode").textContent = credentials;

function setRunState(state, label = state) {
    const pill = $("#run-state");
    pill.dataset.state = state;
    pill.textContent = label;
}

function showError(text) {
    const box = $("#error");
    box.hidden = false;
    box.textContent = text;
}

function showRequest(url, init) {
    const info = $("#request-info");
    info.dataset.credentials = init.credentials ?? "same-origin";
    info.dataset.url = url;
    info.replaceChildren(`${init.method} ${url}`, el("br"), `credentials: ${info.dataset.credentials}`);
}

const counts = new Map();
function countEvent(type) {
    counts.set(type, (counts.get(type) ?? 0) + 1);
    const body = $("#event-counts tbody");
    let row = body.querySelector(`tr[data-type="${type}"]`);
    if (!row) {
        row = el("tr");
        row.dataset.type = type;
        row.append(el("td", "", type), el("td"));
        body.append(row);
    }
    row.lastChild.textContent = String(counts.get(type));
    row.dataset.count = String(counts.get(type));
}

// ---- one turn: what one run rendered --------------------------------------

class Turn {
    constructor(userText) {
        this.root = el("div", "turn");
        this.root.append(el("div", "bubble user", userText));
        $("#turns").append(this.root);
        this.messages = new Map(); // messageId -> { bubble, text, citations, sources }
        this.reasoning = new Map(); // messageId -> card body
        this.tools = new Map(); // toolCallId -> { card, args, argsNode, resultNode }
        this.lastToolResult = null;
        this.lastMessage = null;
    }

    // Text: one bubble per message, re-rendered on every delta.
    startMessage(messageId) {
        const wrap = el("div", "message");
        const bubble = el("div", "bubble assistant");
        bubble.dataset.messageId = messageId;
        bubble.dataset.chunks = "0";
        bubble.dataset.streaming = "true";
        wrap.append(bubble);
        this.root.append(wrap);
        const message = { wrap, bubble, text: "", citations: [], sources: null };
        this.messages.set(messageId, message);
        this.lastMessage = message;
        return message;
    }

    addText(messageId, delta) {
        const message = this.messages.get(messageId) ?? this.startMessage(messageId);
        message.text += delta;
        message.bubble.dataset.chunks = String(Number(message.bubble.dataset.chunks) + 1);
        renderMessage(message);
    }

    endMessage(messageId) {
        const message = this.messages.get(messageId);
        if (message) message.bubble.dataset.streaming = "false";
    }

    // a2a.citation {url?, title?, description?, startIndex?, endIndex?, messageId}
    addCitation(value) {
        const message = (value.messageId && this.messages.get(value.messageId)) ?? this.lastMessage;
        if (!message) return;
        message.citations.push(value);
        if (!message.sources) {
            message.sources = el("div", "card sources");
            message.sources.append(el("div", "label", "Sources"), el("ol"));
            message.wrap.append(message.sources);
        }
        const item = el("li");
        const link = el("a", "", String(value.title ?? value.url ?? "source"));
        if (typeof value.url === "string") link.href = value.url;
        link.target = "_blank";
        link.rel = "noopener";
        item.append(link);
        if (value.description) item.append(` — ${value.description}`);
        message.sources.querySelector("ol").append(item);
        renderMessage(message);
    }

    // Reasoning: REASONING_MESSAGE_* inside REASONING_START/END.
    addReasoning(messageId, delta) {
        let body = this.reasoning.get(messageId);
        if (!body) {
            const card = el("div", "card reasoning");
            card.append(el("div", "label", "Thinking"));
            body = el("div");
            card.append(body);
            this.root.append(card);
            this.reasoning.set(messageId, body);
        }
        body.textContent += delta;
    }

    // Tool calls: START, ARGS (streamed JSON), END, then maybe a RESULT.
    startTool(toolCallId, name) {
        const card = el("div", "card tool");
        card.dataset.toolCallId = toolCallId;
        card.append(el("div", "label", "Tool call"));
        const line = el("div");
        line.append(el("code", "", name), "(");
        const argsNode = el("code");
        line.append(argsNode, ")");
        card.append(line);
        const resultNode = el("div", "result");
        card.append(resultNode);
        this.root.append(card);
        this.tools.set(toolCallId, { card, args: "", argsNode, resultNode });
    }

    addToolArgs(toolCallId, delta) {
        const tool = this.tools.get(toolCallId);
        if (!tool) return;
        tool.args += delta;
        tool.argsNode.textContent = tool.args;
    }

    toolResult(toolCallId, content) {
        const tool = this.tools.get(toolCallId);
        this.lastToolResult = content;
        if (tool) tool.resultNode.textContent = `→ ${content}`;
    }

    toolError(toolCallId, error) {
        const tool = this.tools.get(toolCallId);
        if (tool) tool.card.dataset.error = error;
    }

    // a2a.trajectory {title?, content?, groupId?}: a step of the agent's work.
    addTrajectory(value) {
        const card = el("div", "card trajectory");
        card.append(el("div", "label", `Step${value.title ? ` · ${value.title}` : ""}`));
        if (value.content) card.append(el("div", "", String(value.content)));
        this.root.append(card);
    }

    // a2a.commands [{name, params: [{name, value, normValue?}], commandRequestId?}]:
    // commands the agent asks the client to carry out (multimodal-interaction
    // extension). This page knows SHOW_WEATHER_CARD; any other is listed.
    addCommands(commands) {
        for (const command of Array.isArray(commands) ? commands : [commands]) {
            const card = el("div", "card command");
            card.dataset.command = String(command?.name ?? "");
            card.append(el("div", "label", `Client command · ${command?.name ?? "?"}`));
            const paramsOf = Object.fromEntries((command?.params ?? []).map((p) => [p.name, p.value]));
            if (command?.name === "SHOW_WEATHER_CARD") {
                const widget = el("div", "weather");
                widget.append(el("div", "icon", "☀"));
                const text = el("div");
                text.append(el("div", "city", String(paramsOf.city ?? "?")));
                text.append(el("div", "", this.lastToolResult ?? ""));
                widget.append(text);
                card.append(widget);
            } else {
                card.append(el("code", "", JSON.stringify(paramsOf)));
            }
            this.root.append(card);
        }
    }
}

// The text with its cited spans marked and numbered.
function renderMessage(message) {
    const { bubble, text, citations } = message;
    bubble.replaceChildren();
    const spans = citations
        .map((c, i) => ({ start: Number(c.startIndex), end: Number(c.endIndex), n: i + 1, url: c.url }))
        .filter((s) => Number.isInteger(s.start) && Number.isInteger(s.end) && s.start < s.end && s.end <= text.length)
        .sort((a, b) => a.start - b.start);
    let at = 0;
    for (const span of spans) {
        if (span.start < at) continue; // overlapping: show the first one only
        bubble.append(text.slice(at, span.start), el("mark", "", text.slice(span.start, span.end)));
        const sup = el("sup");
        const link = el("a", "", `[${span.n}]`);
        if (typeof span.url === "string") link.href = span.url;
        sup.append(link);
        bubble.append(sup);
        at = span.end;
    }
    bubble.append(text.slice(at));
}

// ---- the run --------------------------------------------------------------

async function send(userText) {
    const turn = new Turn(userText);
    $("#error").hidden = true;
    $("#send").disabled = true;
    setRunState("running");
    agent.addMessage({ id: randomUUID(), role: "user", content: userText });

    const subscriber = {
        onEvent: ({ event }) => countEvent(event.type),
        onRunStartedEvent: ({ event }) => {
            turn.root.dataset.runId = event.runId;
        },
        onTextMessageStartEvent: ({ event }) => turn.startMessage(event.messageId),
        onTextMessageContentEvent: ({ event }) => turn.addText(event.messageId, event.delta),
        onTextMessageEndEvent: ({ event }) => turn.endMessage(event.messageId),
        onReasoningMessageContentEvent: ({ event }) => turn.addReasoning(event.messageId, event.delta),
        onToolCallStartEvent: ({ event }) => turn.startTool(event.toolCallId, event.toolCallName),
        onToolCallArgsEvent: ({ event }) => turn.addToolArgs(event.toolCallId, event.delta),
        onToolCallResultEvent: ({ event }) => turn.toolResult(event.toolCallId, event.content),
        onCustomEvent: ({ event }) => {
            const { name, value } = event;
            switch (name) {
                case "a2a.trajectory":
                    return turn.addTrajectory(value ?? {});
                case "a2a.citation":
                    return turn.addCitation(value ?? {});
                case "a2a.commands":
                    return turn.addCommands(value);
                case "a2a.tool_error":
                    return turn.toolError(value?.toolCallId, value?.error);
                case "a2a.status":
                    $("#task-state").textContent = `${value?.taskId ?? "task"}: ${value?.state}`;
                    $("#task-state").dataset.state = String(value?.state);
                    return;
                default:
                    return; // a2a.artifact, a2a.data, a2a.file, …: counted only
            }
        },
        onRunFinishedEvent: ({ event }) => {
            turn.root.dataset.finished = "true";
            const state = event.result?.state;
            setRunState("finished", state ? `finished · ${state}` : "finished");
        },
        onRunErrorEvent: ({ event }) => {
            setRunState("failed");
            showError(`The run failed: ${event.code ?? "error"}: ${event.message}`);
        },
    };

    try {
        await agent.runAgent({}, subscriber);
        if ($("#run-state").dataset.state === "running") setRunState("finished");
    } catch (error) {
        if ($("#run-state").dataset.state !== "failed") {
            setRunState("failed");
            showError(
                `The request to ${aguiUrl} failed: ${error?.message ?? error}. ` +
                    `Is the gateway running, and does it allow this page's origin (${location.origin}) ` +
                    `with --cors-origin${credentials === "include" ? " and --cors-credentials" : ""}?`,
            );
        }
    } finally {
        $("#send").disabled = false;
    }
}

$("#composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("#prompt").value.trim();
    if (!text || $("#send").disabled) return;
    $("#prompt").value = "";
    send(text);
});

document.body.dataset.ready = "true";
