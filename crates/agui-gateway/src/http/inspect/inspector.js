// The inspector's page (GET /inspect): runs an agent through
// `POST inspect/agents/{name}/run` and shows, side by side, the A2A events
// that came in (`event: a2a` frames), the AG-UI events that went out and
// the conversation they render to. Plain script, no dependency: everything
// the agent or the gateway sends is put in the page as text (textContent),
// never as markup. URLs are relative, so the page works behind a prefix.
"use strict";

(() => {
  // ---------------------------------------------------------------- SSE

  /// A `text/event-stream` reader (the WHATWG parsing rules): feed it
  /// decoded text in chunks of any size; it calls `onFrame({event, data,
  /// id})` for each complete frame. Lines end in CRLF, LF or CR (a CR at a
  /// chunk's end waits for the next chunk), comments (`: ping`) are skipped,
  /// `data:` lines join with "\n", a frame without data is no frame, and a
  /// frame the stream cut off (no blank line after it) is dropped.
  class SseParser {
    constructor(onFrame) {
      this.onFrame = onFrame;
      this.rest = "";
      this.atStart = true;
      this.data = [];
      this.event = "";
      this.id = null;
      this.lastEventId = "";
      this.comments = 0;
    }

    feed(text, final = false) {
      let buffer = this.rest + text;
      if (this.atStart) {
        if (buffer.length === 0 && !final) return;
        if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1);
        this.atStart = false;
      }
      const eol = /\r\n|\r|\n/g;
      let pos = 0;
      let match;
      while ((match = eol.exec(buffer)) !== null) {
        // A CR last in the chunk may be the first half of a CRLF.
        if (match[0] === "\r" && match.index === buffer.length - 1 && !final) break;
        this.line(buffer.slice(pos, match.index));
        pos = eol.lastIndex;
      }
      this.rest = buffer.slice(pos);
      if (final) {
        // An unterminated last line still counts as a line; the frame it
        // belongs to was never closed by a blank line and is dropped.
        if (this.rest) this.line(this.rest);
        this.rest = "";
        this.data = [];
        this.event = "";
        this.id = null;
      }
    }

    end() {
      this.feed("", true);
    }

    line(line) {
      if (line === "") {
        this.dispatch();
        return;
      }
      if (line[0] === ":") {
        this.comments += 1;
        return;
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
      switch (field) {
        case "data":
          this.data.push(value);
          break;
        case "event":
          this.event = value;
          break;
        case "id":
          if (!value.includes("\0")) {
            this.id = value;
            this.lastEventId = value;
          }
          break;
        default: // `retry` and unknown fields: nothing to show
      }
    }

    dispatch() {
      const data = this.data;
      const event = this.event || "message";
      const id = this.id;
      this.data = [];
      this.event = "";
      this.id = null;
      if (data.length === 0) return;
      this.onFrame({ event, data: data.join("\n"), id });
    }
  }

  // ---------------------------------------------------------- JSON Patch

  function clone(value) {
    return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
  }

  function pointerTokens(pointer) {
    if (pointer === "") return [];
    if (typeof pointer !== "string" || pointer[0] !== "/") {
      throw new Error(`not a JSON Pointer: ${JSON.stringify(pointer)}`);
    }
    return pointer
      .slice(1)
      .split("/")
      .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  }

  function isContainer(value) {
    return value !== null && typeof value === "object";
  }

  function arrayIndex(array, token, forInsert) {
    if (forInsert && token === "-") return array.length;
    if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`bad array index ${JSON.stringify(token)}`);
    const index = Number(token);
    const limit = forInsert ? array.length : array.length - 1;
    if (index > limit) throw new Error(`array index ${index} out of range`);
    return index;
  }

  /// The parent container of `pointer` in `doc` and the last token.
  function locate(doc, pointer) {
    const tokens = pointerTokens(pointer);
    if (tokens.length === 0) return { parent: null, key: null };
    let node = doc;
    for (const token of tokens.slice(0, -1)) {
      if (Array.isArray(node)) node = node[arrayIndex(node, token, false)];
      else if (isContainer(node) && Object.prototype.hasOwnProperty.call(node, token)) node = node[token];
      else throw new Error(`path ${pointer} does not exist`);
    }
    if (!isContainer(node)) throw new Error(`path ${pointer} does not exist`);
    return { parent: node, key: tokens[tokens.length - 1] };
  }

  function getAt(doc, pointer) {
    const { parent, key } = locate(doc, pointer);
    if (parent === null) return doc;
    if (Array.isArray(parent)) return parent[arrayIndex(parent, key, false)];
    if (!Object.prototype.hasOwnProperty.call(parent, key)) throw new Error(`path ${pointer} does not exist`);
    return parent[key];
  }

  function addAt(doc, pointer, value) {
    const { parent, key } = locate(doc, pointer);
    if (parent === null) return value;
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, true), 0, value);
    else parent[key] = value;
    return doc;
  }

  /// In place, so an object's members keep their order.
  function replaceAt(doc, pointer, value) {
    const { parent, key } = locate(doc, pointer);
    if (parent === null) return value;
    if (Array.isArray(parent)) parent[arrayIndex(parent, key, false)] = value;
    else if (Object.prototype.hasOwnProperty.call(parent, key)) parent[key] = value;
    else throw new Error(`path ${pointer} does not exist`);
    return doc;
  }

  function removeAt(doc, pointer) {
    const { parent, key } = locate(doc, pointer);
    if (parent === null) throw new Error("cannot remove the whole document");
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, false), 1);
    else if (Object.prototype.hasOwnProperty.call(parent, key)) delete parent[key];
    else throw new Error(`path ${pointer} does not exist`);
    return doc;
  }

  function deepEqual(a, b) {
    return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
  }

  function canonical(value) {
    if (Array.isArray(value)) return value.map(canonical);
    if (isContainer(value)) {
      const out = {};
      for (const key of Object.keys(value).sort()) out[key] = canonical(value[key]);
      return out;
    }
    return value;
  }

  /// RFC 6902 on a copy of `doc`: returns the patched copy, or throws
  /// (the original is never touched, so a failed patch changes nothing).
  function applyPatch(doc, patch) {
    if (!Array.isArray(patch)) throw new Error("a patch is an array of operations");
    let out = clone(doc);
    for (const op of patch) {
      if (!isContainer(op) || typeof op.op !== "string") throw new Error("an operation needs an op");
      switch (op.op) {
        case "add":
          out = addAt(out, op.path, clone(op.value));
          break;
        case "remove":
          out = removeAt(out, op.path);
          break;
        case "replace":
          out = replaceAt(out, op.path, clone(op.value));
          break;
        case "move": {
          if (op.path.startsWith(`${op.from}/`)) throw new Error("cannot move a value into itself");
          const value = getAt(out, op.from);
          out = addAt(removeAt(out, op.from), op.path, value);
          break;
        }
        case "copy":
          out = addAt(out, op.path, clone(getAt(out, op.from)));
          break;
        case "test":
          if (!deepEqual(getAt(out, op.path), op.value)) throw new Error(`test failed at ${op.path}`);
          break;
        default:
          throw new Error(`unknown op ${JSON.stringify(op.op)}`);
      }
    }
    return out;
  }

  // ------------------------------------------------------------- helpers

  /// An element; children are nodes or strings (always text, never markup).
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === undefined || value === null || value === false) continue;
        if (key === "class") el.className = value;
        else if (key === "text") el.textContent = value;
        else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
        else el.setAttribute(key, value === true ? "" : String(value));
      }
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  function pretty(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch {
      return String(value);
    }
  }

  /// Pretty JSON when `text` is a JSON object or array, else the text.
  function prettyText(text) {
    if (typeof text !== "string") return pretty(text);
    const trimmed = text.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      try {
        return pretty(JSON.parse(trimmed));
      } catch {
        // not JSON after all
      }
    }
    return text;
  }

  function snippet(text, max = 60) {
    const flat = String(text).replace(/\s+/g, " ").trim();
    return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  }

  /// Links out only to http(s) and mailto: a citation's `javascript:` URL
  /// is shown as text.
  function safeUrl(url) {
    if (typeof url !== "string" || url === "") return null;
    try {
      const parsed = new URL(url);
      return ["http:", "https:", "mailto:"].includes(parsed.protocol) ? parsed.href : null;
    } catch {
      return null;
    }
  }

  function newId(prefix) {
    // getRandomValues works on plain http too (randomUUID needs a secure context).
    const bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes);
    return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  }

  function text(value) {
    if (value === undefined || value === null) return "";
    return typeof value === "string" ? value : pretty(value);
  }

  // ---------------------------------------------------------------- page

  const $ = (id) => document.getElementById(id);
  const els = {};

  const ui = {
    running: false,
    abort: null,
    agentsLoaded: false,
  };

  let thread = null;

  function newThread() {
    if (ui.abort) ui.abort.abort();
    thread = {
      id: newId("thread"),
      history: [], // the AG-UI messages sent with every run
      state: {},
      a2aCount: 0,
      aguiCount: 0,
      texts: new Map(), // messageId -> TextView, across the thread
      tools: new Map(), // toolCallId -> ToolView
      waitingCitations: new Map(), // messageId -> [citation] for a message not seen yet
      runs: 0,
    };
    els.threadId.textContent = thread.id;
    els.a2aList.replaceChildren();
    els.aguiList.replaceChildren();
    els.conversation.replaceChildren(els.emptyHint);
    els.a2aCount.textContent = "0";
    els.aguiCount.textContent = "0";
    els.stateInput.value = "{}";
    renderState(false);
    setStatus("idle", "idle", "");
  }

  function setStatus(state, label, detail) {
    els.status.dataset.state = state;
    els.status.textContent = label;
    els.statusDetail.textContent = detail || "";
  }

  function setRunning(running) {
    ui.running = running;
    els.send.disabled = running;
    els.stop.disabled = !running;
    for (const button of document.querySelectorAll("[data-testid=tool-result-send]")) {
      button.disabled = running || button.dataset.sent === "yes";
    }
  }

  function renderState(changed) {
    els.stateView.textContent = pretty(thread.state);
    if (changed) {
      els.stateView.classList.remove("flash");
      // Restart the highlight (reading offsetWidth applies the removal).
      void els.stateView.offsetWidth;
      els.stateView.classList.add("flash");
    }
  }

  function authHeaders() {
    const key = els.apiKey.value.trim();
    return key ? { authorization: `Bearer ${key}` } : {};
  }

  /// Keeps a list scrolled to its end while the user has not scrolled up.
  function appendTo(list, node) {
    const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 48;
    list.append(node);
    if (atEnd) list.scrollTop = list.scrollHeight;
  }

  async function loadAgents() {
    const previous = els.agent.value;
    let body;
    let status = 0;
    try {
      const response = await fetch("v1/agents", { headers: { accept: "application/json", ...authHeaders() }, cache: "no-store" });
      status = response.status;
      const raw = await response.text();
      body = raw ? JSON.parse(raw) : {};
      if (!response.ok) throw Object.assign(new Error("agents"), { body });
    } catch (err) {
      const error = (err.body && err.body.error) || {};
      els.agent.replaceChildren(h("option", { value: "" }, "no agents"));
      const code = error.code || (status ? `HTTP_${status}` : "NETWORK");
      const hint = status === 401 || status === 403 ? " (enter the API key)" : "";
      setStatus("error", `error: ${code}`, `listing agents failed: ${error.message || err.message}${hint}`);
      return;
    }
    const agents = Array.isArray(body.agents) ? body.agents : [];
    const options = agents.map((agent) => {
      const label = [agent.name, agent.cardName && agent.cardName !== agent.name ? `(${agent.cardName})` : "", agent.ready === false ? "· not ready" : ""]
        .filter(Boolean)
        .join(" ");
      return h("option", { value: agent.name, title: agent.description || "" }, label);
    });
    if (options.length === 0) options.push(h("option", { value: "" }, "no agents"));
    els.agent.replaceChildren(...options);
    const chosen = agents.find((a) => a.name === previous) || agents.find((a) => a.default) || agents[0];
    if (chosen) els.agent.value = chosen.name;
    ui.agentsLoaded = true;
    if (!ui.running && els.status.dataset.state !== "finished") {
      setStatus("idle", "idle", `${agents.length} agent${agents.length === 1 ? "" : "s"}`);
    }
  }

  // ------------------------------------------------------- event columns

  function a2aSummary(payload) {
    // JSON-RPC envelope, then the 1.0 wrapper keys, then 0.3 `kind`.
    let item = payload;
    if (isContainer(item) && isContainer(item.error) && !item.kind) {
      const e = item.error;
      return { kind: "error", summary: snippet(`${e.code ?? ""} ${e.message ?? ""}`) };
    }
    if (isContainer(item) && isContainer(item.result)) item = item.result;
    let kind = isContainer(item) && typeof item.kind === "string" ? item.kind : null;
    for (const [key, name] of [["task", "task"], ["message", "message"], ["statusUpdate", "status-update"], ["artifactUpdate", "artifact-update"]]) {
      if (!kind && isContainer(item) && isContainer(item[key])) {
        kind = name;
        item = item[key];
      }
    }
    if (!isContainer(item)) return { kind: "other", summary: snippet(text(item)) };
    const parts = (list) => (Array.isArray(list) ? list : []).map(partSummary).filter(Boolean).join(", ");
    const state = item.status && item.status.state;
    switch (kind) {
      case "task":
        return { kind, summary: [state, item.id].filter(Boolean).join(" · ") };
      case "status-update": {
        const said = item.status && item.status.message ? parts(item.status.message.parts) : "";
        const meta = item.status && item.status.message && item.status.message.metadata ? "metadata" : "";
        return { kind, summary: [state, item.final ? "final" : "", said || meta].filter(Boolean).join(" · ") };
      }
      case "artifact-update": {
        const artifact = item.artifact || {};
        const flags = [item.append ? "append" : "", item.lastChunk ? "last chunk" : ""].filter(Boolean).join(", ");
        return { kind, summary: [artifact.artifactId || artifact.name, flags, parts(artifact.parts)].filter(Boolean).join(" · ") };
      }
      case "message":
        return { kind, summary: [item.role, parts(item.parts)].filter(Boolean).join(" · ") };
      default:
        return { kind: kind || "other", summary: snippet(JSON.stringify(item)) };
    }
  }

  function partSummary(part) {
    if (!isContainer(part)) return "";
    const meta = isContainer(part.metadata) ? part.metadata : {};
    const hint = meta.event_type || meta.kind || "";
    if (typeof part.text === "string") {
      return `${hint ? `${hint} ` : ""}“${snippet(part.text, 40)}”`;
    }
    const data = isContainer(part.data) ? part.data : null;
    if (data) return `data${hint ? ` ${hint}` : data.type ? ` ${data.type}` : ""}`;
    if (part.file || part.url || part.raw) return "file";
    return part.kind || "part";
  }

  function separator(run, label) {
    return h("div", { class: "run-sep", "data-run": run }, h("span", null, label));
  }

  function aguiCategory(type) {
    if (type === "RUN_ERROR" || type === "SUBAGENT_ERROR") return "error";
    if (type.startsWith("RUN_") || type.startsWith("STEP_")) return "run";
    if (type.startsWith("TEXT_")) return "text";
    if (type.startsWith("TOOL_")) return "tool";
    if (type.startsWith("REASONING_") || type.startsWith("THINKING_")) return "reasoning";
    if (type.startsWith("STATE_") || type.startsWith("ACTIVITY_") || type === "MESSAGES_SNAPSHOT") return "state";
    if (type === "CUSTOM") return "custom";
    if (type.startsWith("SUBAGENT_")) return "subagent";
    return "other";
  }

  function aguiShort(event) {
    switch (event.type) {
      case "CUSTOM":
        return String(event.name ?? "");
      case "TEXT_MESSAGE_CONTENT":
      case "REASONING_MESSAGE_CONTENT":
        return `“${snippet(event.delta ?? "", 40)}”`;
      case "TOOL_CALL_START":
        return String(event.toolCallName ?? "");
      case "RUN_ERROR":
        return String(event.code ?? "");
      default:
        return "";
    }
  }

  function compact(event) {
    const rest = {};
    for (const [key, value] of Object.entries(event)) {
      if (key !== "type" && key !== "timestamp") rest[key] = value;
    }
    return Object.keys(rest).length ? JSON.stringify(rest) : "";
  }

  // Hover an AG-UI event: the A2A event it came from lights up (and the
  // other way round). A click also scrolls the other column to it.
  function linkHandlers() {
    const clear = () => {
      for (const el of document.querySelectorAll(".ev.linked")) el.classList.remove("linked");
    };
    const light = (target) => {
      clear();
      const row = target.closest && target.closest(".ev");
      if (!row) return [];
      const lit = [];
      if (row.dataset.a2a) {
        const a2a = els.a2aList.querySelector(`.ev.a2a[data-index="${row.dataset.a2a}"]`);
        if (a2a) lit.push(a2a);
      } else if (row.classList.contains("a2a")) {
        lit.push(...els.aguiList.querySelectorAll(`.ev.agui[data-a2a="${row.dataset.index}"]`));
      }
      row.classList.add("linked");
      for (const el of lit) el.classList.add("linked");
      return lit;
    };
    for (const list of [els.a2aList, els.aguiList]) {
      list.addEventListener("mouseover", (e) => light(e.target));
      list.addEventListener("focusin", (e) => light(e.target));
      list.addEventListener("mouseleave", clear);
      list.addEventListener("click", (e) => {
        const lit = light(e.target);
        if (lit[0]) lit[0].scrollIntoView({ block: "nearest" });
      });
    }
  }

  // ------------------------------------------------------- conversation

  /// An assistant text message; citations are links over their span.
  class TextView {
    constructor(turn, messageId) {
      this.turn = turn;
      this.id = messageId;
      this.content = "";
      this.ended = false;
      this.citations = [];
      this.textEl = h("div", { class: "text", "data-testid": "assistant-text" });
      this.sourcesEl = h("ol", { class: "sources", "data-testid": "citations", hidden: true });
      this.el = h("div", { class: "msg assistant", "data-testid": "assistant-message", "data-message-id": messageId }, this.textEl, this.sourcesEl);
      this.entry = { id: messageId, role: "assistant", content: "" };
      thread.history.push(this.entry);
      const waiting = thread.waitingCitations.get(messageId);
      if (waiting) {
        thread.waitingCitations.delete(messageId);
        this.citations.push(...waiting);
      }
    }

    append(delta) {
      if (typeof delta !== "string" || delta === "") return;
      this.content += delta;
      this.entry.content = this.content;
      if (this.citations.length === 0) this.textEl.append(delta);
      else this.render();
    }

    end(metadata) {
      this.ended = true;
      if (metadata !== undefined) this.entry.metadata = metadata;
      this.el.classList.add("ended");
      this.render();
    }

    cite(citation) {
      this.citations.push(citation);
      this.render();
    }

    /// Offsets count Unicode characters (code points) of the message's
    /// content. A span past the text so far waits for more text; one that
    /// still does not fit once the message ended, overlaps another or is
    /// not a pair of integers is listed under the text, unlinked.
    render() {
      const chars = Array.from(this.content);
      const spans = [];
      const sources = [];
      const sorted = this.citations
        .map((c, i) => ({ c, i, start: Number(c.startIndex), end: Number(c.endIndex) }))
        .sort((a, b) => (a.start - b.start) || (a.i - b.i));
      let covered = 0;
      for (const entry of sorted) {
        const { c, start, end } = entry;
        const hasSpan = c.startIndex !== undefined || c.endIndex !== undefined;
        let note = "";
        if (!hasSpan) {
          note = "";
        } else if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end <= start) {
          note = `invalid span ${text(c.startIndex)}–${text(c.endIndex)}`;
        } else if (end > chars.length) {
          note = this.ended ? `span ${start}–${end} is past the text (${chars.length})` : "waiting for the text";
        } else if (start < covered) {
          note = `span ${start}–${end} overlaps another`;
        } else {
          spans.push(entry);
          covered = end;
        }
        sources.push({ c, note, linked: spans.includes(entry) });
      }
      const nodes = [];
      let at = 0;
      for (const { c, start, end } of spans) {
        if (start > at) nodes.push(chars.slice(at, start).join(""));
        const href = safeUrl(c.url);
        const label = chars.slice(start, end).join("");
        const title = [text(c.title), text(c.description)].filter(Boolean).join(" — ") || text(c.url);
        nodes.push(
          href
            ? h("a", { class: "citation", "data-testid": "citation", href, title, target: "_blank", rel: "noopener noreferrer" }, label)
            : h("span", { class: "citation unsafe", "data-testid": "citation", title: `${title} (not a web link)` }, label),
        );
        at = end;
      }
      if (at < chars.length) nodes.push(chars.slice(at).join(""));
      this.textEl.replaceChildren(...nodes);
      this.sourcesEl.replaceChildren(...sources.map(({ c, note, linked }) => sourceItem(c, note, linked)));
      this.sourcesEl.hidden = sources.length === 0;
    }
  }

  function sourceItem(c, note, linked) {
    const href = safeUrl(c.url);
    const label = text(c.title) || text(c.url) || "source";
    return h(
      "li",
      { class: linked ? "linked-source" : "unlinked-source", "data-testid": "citation-source" },
      href ? h("a", { href, target: "_blank", rel: "noopener noreferrer", title: text(c.url) }, label) : h("span", null, label),
      c.description ? h("span", { class: "muted" }, ` — ${text(c.description)}`) : null,
      note ? h("span", { class: "note", "data-testid": "citation-note" }, ` (${note})`) : null,
    );
  }

  class ToolView {
    constructor(turn, id, name, parentMessageId) {
      this.id = id;
      this.name = name || "tool";
      this.parentMessageId = parentMessageId || null;
      this.args = "";
      this.argsEl = h("pre", { class: "json", "data-testid": "tool-args" });
      this.resultEl = h("pre", { class: "json result", "data-testid": "tool-result" }, "…");
      this.errorEl = h("div", { class: "tool-error", "data-testid": "tool-error", hidden: true });
      this.nameEl = h("span", { class: "tool-name", "data-testid": "tool-name" }, this.name);
      this.el = h(
        "div",
        { class: "tool-call", "data-testid": "tool-call", "data-tool-call-id": id, "data-state": "calling" },
        h("div", { class: "tool-head" }, h("span", { class: "tag" }, "tool"), this.nameEl, h("code", { class: "muted id" }, id)),
        h("div", { class: "label" }, "arguments"),
        this.argsEl,
        h("div", { class: "label" }, "result"),
        this.resultEl,
        this.errorEl,
      );
      turn.add(this.el);
    }

    addArgs(delta) {
      if (typeof delta !== "string") return;
      this.args += delta;
      this.argsEl.textContent = this.args;
    }

    endArgs() {
      this.argsEl.textContent = this.args === "" ? "(none)" : prettyText(this.args);
      if (this.el.dataset.state === "calling") this.el.dataset.state = "called";
    }

    result(content) {
      this.resultEl.textContent = prettyText(text(content));
      this.resultEl.classList.remove("pending");
      this.el.dataset.state = this.el.dataset.state === "failed" ? "failed" : "done";
    }

    failed(error) {
      this.el.dataset.state = "failed";
      this.errorEl.hidden = false;
      this.errorEl.textContent = `error: ${text(error)}`;
    }

    /// A call of one of the client's own tools: the run ended so that the
    /// client answers it. The answer goes back as a `tool` message.
    askForResult() {
      this.el.dataset.state = "pending";
      this.resultEl.textContent = "waiting for the client's result";
      this.resultEl.classList.add("pending");
      const input = h("input", { type: "text", class: "tool-answer", "data-testid": "tool-result-input", placeholder: `result of ${this.name}`, "aria-label": `result of ${this.name}` });
      const button = h("button", { type: "button", "data-testid": "tool-result-send" }, "Send result");
      button.addEventListener("click", () => {
        if (ui.running) return;
        button.dataset.sent = "yes";
        button.disabled = true;
        input.disabled = true;
        this.resultEl.textContent = input.value;
        this.resultEl.classList.remove("pending");
        this.el.dataset.state = "answered";
        run({ toolResult: { toolCallId: this.id, name: this.name, content: input.value } });
      });
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") button.click();
      });
      this.el.append(h("div", { class: "tool-answer-row" }, input, button));
    }
  }

  /// One run: its turn in the conversation, its rows in both columns.
  class Turn {
    constructor(runId) {
      this.runId = runId;
      this.started = performance.now();
      this.a2aIndex = "";
      this.a2aRows = 0;
      this.aguiRows = 0;
      this.terminal = null;
      this.reasoning = null;
      this.reasoningByMessage = new Map();
      this.lastText = null;
      this.orphanCitations = [];
      this.taskStates = [];
      this.activities = new Map();
      this.lastItem = null;
      this.stateEl = h("span", { class: "task-state", "data-testid": "task-state" });
      this.body = h("div", { class: "turn-body" });
      this.el = h(
        "div",
        { class: "turn", "data-testid": "assistant-turn", "data-run": runId },
        h("div", { class: "role" }, h("span", null, "assistant"), h("code", { class: "muted" }, runId), this.stateEl),
        this.body,
      );
      appendTo(els.conversation, this.el);
    }

    add(node, kind) {
      this.body.append(node);
      this.lastItem = { node, kind };
      const list = els.conversation;
      if (list.scrollHeight - list.scrollTop - list.clientHeight < 160) list.scrollTop = list.scrollHeight;
      return node;
    }

    note(textContent, cls = "", testid = "note") {
      return this.add(h("div", { class: `note-line ${cls}`, "data-testid": testid }, textContent), "note");
    }

    details(title, value, testid) {
      return this.add(
        h("details", { class: "data-card", "data-testid": testid }, h("summary", null, title), h("pre", { class: "json" }, pretty(value))),
        "data",
      );
    }

    // --- frames

    frame(frame) {
      if (frame.event === "a2a") {
        this.a2a(frame);
        return;
      }
      let event;
      try {
        event = JSON.parse(frame.data);
      } catch {
        event = null;
      }
      if (frame.event !== "message" || !isContainer(event) || typeof event.type !== "string") {
        this.aguiRow({ type: frame.event === "message" ? "INVALID" : `event: ${frame.event}` }, frame.id, frame.data);
        return;
      }
      this.aguiRow(event, frame.id, null);
      try {
        this.apply(event);
      } catch (err) {
        this.note(`could not render ${event.type}: ${err.message}`, "warn", "render-error");
      }
    }

    a2a(frame) {
      thread.a2aCount += 1;
      this.a2aRows += 1;
      const index = thread.a2aCount;
      this.a2aIndex = String(index);
      let payload;
      let body = frame.data;
      try {
        payload = JSON.parse(frame.data);
        body = pretty(payload);
      } catch {
        payload = frame.data;
      }
      const { kind, summary } = typeof payload === "string" ? { kind: "not-json", summary: snippet(payload) } : a2aSummary(payload);
      const produced = h("span", { class: "produced" });
      const row = h(
        "details",
        { class: `ev a2a kind-${kind.replace(/[^a-z0-9-]/gi, "")}`, "data-testid": "a2a-event", "data-index": index, "data-run": this.runId, "data-kind": kind, tabindex: "-1" },
        h("summary", null, h("span", { class: "n" }, `#${index}`), h("span", { class: "badge" }, kind), h("span", { class: "sum" }, summary), produced),
        h("pre", { class: "json" }, body),
      );
      row.produced = 0;
      row.producedEl = produced;
      els.a2aCount.textContent = String(thread.a2aCount);
      appendTo(els.a2aList, row);
    }

    aguiRow(event, id, raw) {
      thread.aguiCount += 1;
      this.aguiRows += 1;
      const type = String(event.type);
      const category = raw === null ? aguiCategory(type) : "invalid";
      const short = raw === null ? aguiShort(event) : "";
      const row = h(
        "div",
        { class: `ev agui cat-${category}`, "data-testid": "agui-event", "data-type": type, "data-index": thread.aguiCount, "data-run": this.runId, "data-a2a": this.a2aIndex || null, tabindex: "0" },
        h("div", { class: "line" }, h("span", { class: "badge" }, type), short ? h("span", { class: "sum" }, short) : null, id ? h("code", { class: "eid", "data-testid": "event-id" }, id) : null),
        h("code", { class: "compact" }, raw === null ? compact(event) : raw),
      );
      els.aguiCount.textContent = String(thread.aguiCount);
      appendTo(els.aguiList, row);
      if (this.a2aIndex) {
        const source = els.a2aList.querySelector(`.ev.a2a[data-index="${this.a2aIndex}"]`);
        if (source) {
          source.produced += 1;
          source.producedEl.textContent = `→ ${source.produced}`;
          source.producedEl.title = `${source.produced} AG-UI event${source.produced === 1 ? "" : "s"}`;
        }
      }
    }

    // --- AG-UI events into the conversation

    apply(e) {
      switch (e.type) {
        case "RUN_STARTED":
          break;
        case "RUN_FINISHED":
          this.finished(e);
          break;
        case "RUN_ERROR":
          this.failed(e.code, e.message, e);
          break;
        case "TEXT_MESSAGE_START":
          this.textView(e.messageId);
          break;
        case "TEXT_MESSAGE_CONTENT":
        case "TEXT_MESSAGE_CHUNK":
          this.textView(e.messageId).append(e.delta);
          break;
        case "TEXT_MESSAGE_END":
          this.textView(e.messageId).end(e.metadata);
          break;
        case "TOOL_CALL_START":
          this.toolView(e.toolCallId, e.toolCallName, e.parentMessageId);
          break;
        case "TOOL_CALL_ARGS":
        case "TOOL_CALL_CHUNK":
          this.toolView(e.toolCallId, e.toolCallName, e.parentMessageId).addArgs(e.delta);
          break;
        case "TOOL_CALL_END":
          this.toolView(e.toolCallId).endArgs();
          break;
        case "TOOL_CALL_RESULT":
          this.toolView(e.toolCallId).result(e.content);
          break;
        case "REASONING_START":
        case "THINKING_START":
          this.reasoning = this.reasoningBlock(e.title);
          break;
        case "REASONING_MESSAGE_START":
        case "THINKING_TEXT_MESSAGE_START":
          if (!this.reasoning) this.reasoning = this.reasoningBlock();
          if (e.messageId) this.reasoningByMessage.set(e.messageId, this.reasoning);
          break;
        case "REASONING_MESSAGE_CONTENT":
        case "REASONING_MESSAGE_CHUNK":
        case "THINKING_TEXT_MESSAGE_CONTENT": {
          let block = this.reasoningByMessage.get(e.messageId) || this.reasoning;
          if (!block) {
            block = this.reasoning = this.reasoningBlock();
            if (e.messageId) this.reasoningByMessage.set(e.messageId, block);
          }
          if (typeof e.delta === "string") block.textEl.append(e.delta);
          break;
        }
        case "REASONING_MESSAGE_END":
        case "THINKING_TEXT_MESSAGE_END":
          break;
        case "REASONING_END":
        case "THINKING_END":
          if (this.reasoning) this.reasoning.el.classList.add("ended");
          this.reasoning = null;
          break;
        case "STATE_SNAPSHOT":
          thread.state = clone(e.snapshot) ?? {};
          renderState(true);
          break;
        case "STATE_DELTA":
          try {
            thread.state = applyPatch(thread.state, e.delta);
            renderState(true);
          } catch (err) {
            this.note(`STATE_DELTA did not apply: ${err.message}`, "warn", "state-error");
          }
          break;
        case "MESSAGES_SNAPSHOT":
          this.details("messages snapshot", e.messages, "messages-snapshot");
          break;
        case "ACTIVITY_SNAPSHOT":
          this.activitySnapshot(e);
          break;
        case "ACTIVITY_DELTA":
          this.activityDelta(e);
          break;
        case "CUSTOM":
          this.custom(e.name, e.value);
          break;
        case "RAW":
          this.details(`raw event${e.source ? ` from ${e.source}` : ""}`, e.event, "raw");
          break;
        case "STEP_STARTED":
          this.note(`step ${text(e.stepName)} started`, "muted", "step");
          break;
        case "STEP_FINISHED":
          this.note(`step ${text(e.stepName)} finished`, "muted", "step");
          break;
        case "SUBAGENT_STARTED":
          this.note(`subagent ${text(e.name)} ${text(e.subagentRunId)} started`, "subagent", "subagent");
          break;
        case "SUBAGENT_FINISHED":
          this.note(`subagent ${text(e.subagentRunId)} finished${e.outcome && e.outcome.type ? ` (${e.outcome.type})` : ""}`, "subagent", "subagent");
          break;
        case "SUBAGENT_ERROR":
          this.note(`subagent ${text(e.subagentRunId)} failed: ${text(e.code)} ${text(e.message)}`, "warn", "subagent");
          break;
        default:
          break;
      }
    }

    textView(messageId) {
      const id = messageId || `${this.runId}-text`;
      let view = thread.texts.get(id);
      if (!view) {
        view = new TextView(this, id);
        thread.texts.set(id, view);
        this.add(view.el, "text");
        if (this.orphanCitations.length) {
          for (const c of this.orphanCitations.splice(0)) view.cite(c);
        }
      }
      this.lastText = view;
      return view;
    }

    toolView(id, name, parent) {
      const key = id || `${this.runId}-tool`;
      let view = thread.tools.get(key);
      if (!view) {
        view = new ToolView(this, key, name, parent);
        thread.tools.set(key, view);
      } else if (name && view.name !== name) {
        view.name = name;
        view.nameEl.textContent = name;
      }
      return view;
    }

    reasoningBlock(title) {
      const textEl = h("div", { class: "reasoning-text", "data-testid": "reasoning-text" });
      const metaEl = h("span", { class: "muted reasoning-meta" });
      const el = h("details", { class: "reasoning", "data-testid": "reasoning", open: true }, h("summary", null, title ? `Reasoning: ${title}` : "Reasoning", metaEl), textEl);
      this.add(el, "reasoning");
      return { el, textEl, metaEl };
    }

    citation(c) {
      const view = (c.messageId && thread.texts.get(c.messageId)) || (!c.messageId && this.lastText);
      if (view) {
        view.cite(c);
      } else if (c.messageId) {
        // Before its text: kept until that message starts.
        const list = thread.waitingCitations.get(c.messageId) || [];
        list.push(c);
        thread.waitingCitations.set(c.messageId, list);
        this.pendingCitationIds = (this.pendingCitationIds || new Set()).add(c.messageId);
      } else {
        this.orphanCitations.push(c);
      }
    }

    trajectory(step) {
      let block = this.lastItem && this.lastItem.kind === "trajectory" ? this.lastItem.node : null;
      if (!block) {
        block = this.add(h("div", { class: "trajectory", "data-testid": "trajectory" }, h("div", { class: "block-title" }, "Trajectory"), h("ol")), "trajectory");
      }
      const title = text(step.title);
      const content = text(step.content);
      block.querySelector("ol").append(
        h(
          "li",
          { "data-testid": "trajectory-step", "data-group": step.groupId === undefined ? null : text(step.groupId) },
          title ? h("strong", null, title) : null,
          title && content ? " " : null,
          content ? h("span", null, content) : null,
        ),
      );
    }

    commands(value) {
      const list = Array.isArray(value) ? value : [value];
      const items = list.map((cmd) => {
        if (!isContainer(cmd)) return h("li", { "data-testid": "command" }, h("code", null, text(cmd)));
        const params = Array.isArray(cmd.params) ? cmd.params : [];
        return h(
          "li",
          { "data-testid": "command", "data-command": text(cmd.name) },
          h("code", { class: "cmd-name" }, text(cmd.name) || "(unnamed)"),
          params.length
            ? h("span", { class: "params" }, params.map((p) => h("span", { class: "param" }, isContainer(p) ? `${text(p.name)}=${text(p.value)}` : text(p))))
            : null,
          cmd.commandRequestId ? h("code", { class: "muted id" }, text(cmd.commandRequestId)) : null,
        );
      });
      this.add(h("div", { class: "commands", "data-testid": "commands" }, h("div", { class: "block-title" }, "Commands"), h("ul", null, items)), "commands");
    }

    file(f) {
      const href = safeUrl(f.uri);
      const label = f.name || f.uri || "file";
      const parts = [h("span", { class: "tag" }, "file"), href ? h("a", { href, target: "_blank", rel: "noopener noreferrer" }, label) : h("span", null, label)];
      if (f.mediaType) parts.push(h("span", { class: "muted" }, ` ${f.mediaType}`));
      const card = h("div", { class: "file-card", "data-testid": "file" }, parts);
      if (typeof f.bytes === "string" && /^image\/(png|jpeg|gif|webp)$/.test(f.mediaType || "") && /^[A-Za-z0-9+/=\s]+$/.test(f.bytes)) {
        card.append(h("img", { src: `data:${f.mediaType};base64,${f.bytes.replace(/\s/g, "")}`, alt: label }));
      } else if (typeof f.bytes === "string") {
        card.append(h("span", { class: "muted" }, ` (${Math.floor((f.bytes.length * 3) / 4)} bytes inline)`));
      }
      this.add(card, "file");
    }

    custom(name, value) {
      const v = isContainer(value) ? value : {};
      switch (name) {
        case "a2a.status":
          this.taskState(v);
          break;
        case "a2a.trajectory":
          this.trajectory(v);
          break;
        case "a2a.citation":
          this.citation(v);
          break;
        case "a2a.commands":
          this.commands(value);
          break;
        case "a2a.usage":
          this.usage(v.usage);
          break;
        case "a2a.tool_error":
          this.toolView(v.toolCallId).failed(v.error);
          break;
        case "a2a.error":
          this.note(`agent error${v.code ? ` ${v.code}` : ""}: ${text(v.message)}`, "warn", "agent-error");
          break;
        case "a2a.reasoning": {
          const block = (v.messageId && this.reasoningByMessage.get(v.messageId)) || null;
          const info = [v.thinkingType, v.signature ? "signed" : ""].filter(Boolean).join(", ");
          if (block && info) block.metaEl.textContent = ` (${info})`;
          break;
        }
        case "a2a.file":
          this.file(v);
          break;
        case "a2a.data":
          this.details(`data${v.artifactId ? ` · ${v.artifactId}` : ""}`, v.data, "data");
          break;
        case "a2a.artifact":
          this.note(`artifact · ${text(v.name || v.artifactId)}${v.description ? `: ${text(v.description)}` : ""}`, "muted", "artifact");
          break;
        default:
          this.details(`custom · ${text(name)}`, value, "custom");
      }
    }

    taskState(v) {
      const state = text(v.state);
      if (!this.taskId && v.taskId) this.taskId = v.taskId;
      if (v.taskId && this.taskId && v.taskId !== this.taskId) {
        this.note(`task ${v.taskId}: ${state}`, "muted", "other-task");
        return;
      }
      if (this.taskStates[this.taskStates.length - 1] !== state) this.taskStates.push(state);
      this.stateEl.textContent = `task ${this.taskStates.join(" → ")}`;
      this.stateEl.dataset.state = state;
    }

    activitySnapshot(e) {
      const existing = this.activities.get(e.messageId);
      if (existing && e.replace === false) return;
      const pre = h("pre", { class: "json" });
      const view = existing || {
        el: h("div", { class: "activity", "data-testid": "activity", "data-message-id": e.messageId }, h("div", { class: "block-title" }, `Activity · ${text(e.activityType)}`), pre),
        pre,
      };
      view.content = clone(e.content);
      view.pre.textContent = pretty(view.content);
      if (!existing) {
        this.activities.set(e.messageId, view);
        this.add(view.el, "activity");
      }
    }

    activityDelta(e) {
      const view = this.activities.get(e.messageId);
      if (!view) {
        this.note(`ACTIVITY_DELTA for unknown activity ${text(e.messageId)}`, "warn", "activity-error");
        return;
      }
      try {
        view.content = applyPatch(view.content, e.patch);
        view.pre.textContent = pretty(view.content);
      } catch (err) {
        this.note(`ACTIVITY_DELTA did not apply: ${err.message}`, "warn", "activity-error");
      }
    }

    // --- the end of the run

    flushCitations() {
      const left = [...this.orphanCitations.splice(0)];
      for (const id of this.pendingCitationIds || []) {
        left.push(...(thread.waitingCitations.get(id) || []));
        thread.waitingCitations.delete(id);
      }
      if (left.length) {
        this.add(
          h("div", { class: "sources-block" }, h("div", { class: "block-title" }, "Sources (no text to place them on)"), h("ol", { class: "sources" }, left.map((c) => sourceItem(c, "no such message", false)))),
          "sources",
        );
      }
    }

    /// The run's token usage (AG-UI 1.0's TokenUsage), one line per model.
    usage(entries) {
      const list = (Array.isArray(entries) ? entries : []).filter(isContainer);
      if (!list.length) return;
      const n = (v) => (Number.isSafeInteger(v) ? v : null);
      const items = list.map((u) => {
        const input = [n(u.inputTokens) ?? "?", n(u.cachedInputTokens) ? ` (${u.cachedInputTokens} cached)` : ""].join("");
        const output = [n(u.outputTokens) ?? "?", n(u.reasoningTokens) ? ` (${u.reasoningTokens} reasoning)` : ""].join("");
        const who = [u.provider, u.model].filter((x) => typeof x === "string" && x).join(" ") || "model not named";
        return h("li", { "data-testid": "usage-entry", "data-total": String(n(u.totalTokens) ?? "") }, h("code", null, who), ` ${n(u.totalTokens) ?? "?"} tokens: ${input} in, ${output} out`);
      });
      this.add(h("div", { class: "usage", "data-testid": "usage" }, h("div", { class: "block-title" }, "Token usage"), h("ul", null, items)), "usage");
    }

    finished(e) {
      this.terminal = "finished";
      this.flushCitations();
      this.usage(e.usage);
      const result = isContainer(e.result) ? e.result : {};
      const outcome = isContainer(e.outcome) ? e.outcome : null;
      const pendingIds = outcome && Array.isArray(outcome.pendingToolCallIds) ? outcome.pendingToolCallIds : result.pendingToolCallIds;
      const pending = Array.isArray(pendingIds) ? pendingIds : [];
      const lines = [h("strong", null, "Run finished"), result.state ? h("span", null, ` · ${result.state}`) : null];
      const el = h("div", { class: "outcome", "data-testid": "outcome", "data-state": text(result.state) || "finished" }, h("div", null, lines));
      if (outcome && outcome.type === "interrupt") {
        el.dataset.outcome = "interrupt";
        const items = (Array.isArray(outcome.interrupts) ? outcome.interrupts : []).map((i) =>
          h("li", { "data-testid": "interrupt" }, h("code", null, text(i.reason)), ` ${text(i.message || i.toolCallId || i.id)}`),
        );
        el.append(h("div", null, "Interrupted, waiting for:"), h("ul", null, items));
      } else if (outcome && outcome.type) {
        el.dataset.outcome = outcome.type;
        el.append(h("div", null, `outcome: ${outcome.type}`));
      }
      if (pending.length) el.append(h("div", { class: "muted" }, `waiting for the client's tool result: ${pending.join(", ")}`));
      this.add(el, "outcome");
      for (const id of pending) this.clientTool(id);
      const seconds = ((performance.now() - this.started) / 1000).toFixed(2);
      const waiting = outcome && outcome.type === "interrupt" ? "interrupted" : pending.length ? "waiting for a tool result" : "";
      setStatus("finished", "finished", [waiting, `${this.aguiRows} AG-UI`, `${this.a2aRows} A2A`, `${seconds} s`].filter(Boolean).join(" · "));
    }

    /// Records a client tool's call on the assistant message it follows
    /// (the history the next run sends), and asks for its result.
    clientTool(id) {
      const view = thread.tools.get(id);
      if (!view) return;
      let parent = view.parentMessageId && thread.history.find((m) => m.id === view.parentMessageId && m.role === "assistant");
      if (!parent) {
        parent = { id: newId("assistant"), role: "assistant", content: "" };
        thread.history.push(parent);
      }
      parent.toolCalls = parent.toolCalls || [];
      parent.toolCalls.push({ id, type: "function", function: { name: view.name, arguments: view.args || "{}" } });
      view.askForResult();
    }

    failed(code, message, detail) {
      this.terminal = "error";
      this.flushCitations();
      if (isContainer(detail)) this.usage(detail.usage);
      const label = code ? String(code) : "RUN_ERROR";
      const el = h(
        "div",
        { class: "run-error", "data-testid": "run-error", "data-code": label },
        h("div", null, h("strong", null, label), h("span", { "data-testid": "run-error-message" }, ` ${text(message)}`)),
      );
      if (detail !== undefined) el.append(h("pre", { class: "json" }, typeof detail === "string" ? detail : pretty(detail)));
      this.add(el, "error");
      const seconds = ((performance.now() - this.started) / 1000).toFixed(2);
      setStatus("error", `error: ${label}`, [text(message), `${this.aguiRows} AG-UI`, `${this.a2aRows} A2A`, `${seconds} s`].filter(Boolean).join(" · "));
    }
  }

  // ----------------------------------------------------------------- run

  function optionsError(message) {
    els.optionsError.textContent = message;
    if (message) els.options.open = true;
  }

  async function run({ userText, toolResult }) {
    if (ui.running) return;
    const agent = els.agent.value;
    if (!agent) {
      setStatus("error", "error: NO_AGENT", "no agent to run");
      return;
    }
    let state;
    let tools;
    try {
      state = JSON.parse(els.stateInput.value.trim() || "{}");
      if (!isContainer(state) || Array.isArray(state)) throw new Error("the state must be a JSON object");
    } catch (err) {
      optionsError(`shared state: ${err.message}`);
      return;
    }
    try {
      tools = JSON.parse(els.toolsInput.value.trim() || "[]");
      if (!Array.isArray(tools)) throw new Error("the tools must be a JSON array");
    } catch (err) {
      optionsError(`client tools: ${err.message}`);
      return;
    }
    optionsError("");
    els.emptyHint.remove();
    thread.runs += 1;
    const runId = newId("run");
    if (userText !== undefined) {
      const message = { id: newId("user"), role: "user", content: userText };
      thread.history.push(message);
      appendTo(els.conversation, h("div", { class: "msg user", "data-testid": "user-message", "data-message-id": message.id }, h("div", { class: "role" }, "you"), h("div", { class: "text" }, userText)));
    }
    if (toolResult) {
      thread.history.push({ id: newId("tool"), role: "tool", toolCallId: toolResult.toolCallId, content: toolResult.content });
      appendTo(
        els.conversation,
        h("div", { class: "msg user tool-sent", "data-testid": "tool-result-message" }, h("div", { class: "role" }, `you · result of ${toolResult.name}`), h("div", { class: "text" }, toolResult.content)),
      );
    }
    const label = userText !== undefined ? `run ${thread.runs} · “${snippet(userText, 40)}”` : `run ${thread.runs} · tool result`;
    appendTo(els.a2aList, separator(runId, label));
    appendTo(els.aguiList, separator(runId, label));
    thread.state = state;
    renderState(false);
    const body = { threadId: thread.id, runId, messages: thread.history, state, tools, context: [], forwardedProps: {} };
    if (els.protocol.value) body.protocolVersion = els.protocol.value;
    const payload = JSON.stringify(body);
    const turn = new Turn(runId);
    const controller = new AbortController();
    ui.abort = controller;
    const runThread = thread;
    setRunning(true);
    setStatus("running", "running…", `${agent} · ${runId}`);
    try {
      const response = await fetch(`inspect/agents/${encodeURIComponent(agent)}/run`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", ...authHeaders() },
        body: payload,
        signal: controller.signal,
        cache: "no-store",
      });
      if (!response.ok) {
        await httpError(turn, response);
        return;
      }
      const type = response.headers.get("content-type") || "";
      if (!type.includes("text/event-stream") || !response.body) {
        const raw = await response.text();
        turn.failed("UNEXPECTED_RESPONSE", `expected an event stream, got ${type || "no content type"}`, raw);
        return;
      }
      const parser = new SseParser((frame) => {
        if (thread === runThread) turn.frame(frame);
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder("utf-8");
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
      parser.feed(decoder.decode());
      parser.end();
      if (!turn.terminal && thread === runThread) {
        turn.failed("STREAM_ENDED", "the stream ended without RUN_FINISHED or RUN_ERROR");
      }
    } catch (err) {
      if (thread !== runThread) return;
      if (err.name === "AbortError") {
        turn.note("stopped by you (the page closed the stream)", "warn", "stopped");
        setStatus("stopped", "stopped", runId);
      } else if (!turn.terminal) {
        turn.failed("NETWORK", err.message);
      }
    } finally {
      if (ui.abort === controller) ui.abort = null;
      if (thread === runThread) {
        setRunning(false);
        els.stateInput.value = pretty(thread.state);
      }
    }
  }

  /// An error the gateway answered before any stream: `{"error": {code,
  /// message, …}}` with a 4xx or 5xx status (or whatever a proxy sent).
  async function httpError(turn, response) {
    const raw = await response.text().catch(() => "");
    let parsed = null;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = null;
    }
    const error = isContainer(parsed) && isContainer(parsed.error) ? parsed.error : {};
    const code = error.code ? String(error.code) : `HTTP_${response.status}`;
    const message = error.message ? String(error.message) : response.statusText || "request failed";
    const shown = parsed === null ? raw : pretty(parsed);
    thread.aguiCount += 1;
    appendTo(
      els.aguiList,
      h(
        "div",
        { class: "ev agui cat-error http-error", "data-testid": "http-error", "data-status": response.status, "data-run": turn.runId },
        h("div", { class: "line" }, h("span", { class: "badge" }, `HTTP ${response.status}`), h("span", { class: "sum" }, code)),
        h("code", { class: "compact" }, raw),
      ),
    );
    els.aguiCount.textContent = String(thread.aguiCount);
    turn.failed(code, `${message} (HTTP ${response.status})`, shown);
  }

  function send() {
    const value = els.message.value;
    if (value.trim() === "" || ui.running) return;
    els.message.value = "";
    run({ userText: value });
  }

  function init() {
    Object.assign(els, {
      agent: $("agent"),
      apiKey: $("api-key"),
      newThread: $("new-thread"),
      threadId: $("thread-id"),
      status: $("status"),
      statusDetail: $("status-detail"),
      message: $("message"),
      send: $("send"),
      stop: $("stop"),
      options: $("options"),
      stateInput: $("state-input"),
      toolsInput: $("tools-input"),
      protocol: $("protocol"),
      optionsError: $("options-error"),
      a2aList: $("a2a-list"),
      aguiList: $("agui-list"),
      a2aCount: $("a2a-count"),
      aguiCount: $("agui-count"),
      conversation: $("conversation"),
      emptyHint: $("empty-hint"),
      stateView: $("state-view"),
    });
    els.send.addEventListener("click", send);
    els.message.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send();
      }
    });
    els.stop.addEventListener("click", () => {
      if (ui.abort) ui.abort.abort();
    });
    els.newThread.addEventListener("click", () => {
      newThread();
      setRunning(false);
      els.message.focus();
    });
    // The key stays in this page's memory (the field): never stored, never in a URL.
    els.apiKey.addEventListener("change", loadAgents);
    // The field sits in a form (browsers want password fields in one) that
    // never submits: Enter reloads the agents with the key.
    $("key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      loadAgents();
    });
    linkHandlers();
    newThread();
    loadAgents();
  }

  // For tests and the curious: the stream parser and the patcher.
  window.aguiInspector = Object.freeze({ SseParser, applyPatch });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
