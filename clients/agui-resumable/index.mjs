// agui-gateway-resumable: an AG-UI HttpAgent that survives a dropped
// connection to agui-gateway.
//
// The gateway puts `id: <runkey>.<n>` on every SSE frame and, when the same
// request is repeated with `Last-Event-ID`, sends every frame after that id
// and then the rest of the run live. `POST <url>/connect` with
// `{threadId, runId?}` replays a thread's run from its first event (204 when
// the gateway keeps none). @ag-ui/client's own parser ignores `id:` lines and
// never reconnects, so this subclass reads the response bytes itself, keeps
// the last id, reconnects when the body breaks off before RUN_FINISHED or
// RUN_ERROR, and hands only complete frames to the client's own parser
// (`transformHttpEventStream` of the client version in use).
//
// This entry point imports nothing: `resumable(HttpAgent, clientModule)`
// takes the classes and functions of whichever @ag-ui/client the caller has
// (1.0.0, 0.0.59 and 0.0.48 are tested). `./http` (http.mjs) is the same
// thing ready-made from the `@ag-ui/client` peer dependency.

const TERMINAL_TYPES = new Set(["RUN_FINISHED", "RUN_ERROR"]);
const PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto";

/** The defaults of the `reconnect` option. */
export const DEFAULT_RECONNECT = Object.freeze({
  maxAttempts: 5,
  initialDelayMs: 200,
  maxDelayMs: 3000,
});

// Per-instance data lives under symbols, not #private fields: the clients'
// clone() builds the copy with Object.create(prototype), and a #field read
// on such an object throws.
const OPTIONS = Symbol("agui-resumable.options");
const STATUS = Symbol("agui-resumable.status");
const CONNECT_RUN_ID = Symbol("agui-resumable.connectRunId");
const STOP_ON_ABORT = Symbol("agui-resumable.stopOnAbort");
const LAST_RUN = Symbol("agui-resumable.lastRun");

/**
 * An HTTP answer the agent could not use: a non-2xx status on the first
 * request or on a reconnect, or a 204 where a stream was needed.
 * The message starts with `HTTP <status>: <body>`, as @ag-ui/client's own
 * errors do; `status`, `code` (the gateway's `error.code`, e.g.
 * `RUN_MISMATCH`, `RUN_NOT_RESUMABLE`) and `payload` are set.
 */
export class ResumableHttpError extends Error {
  /**
   * @param {string} message
   * @param {{status: number, code?: string | null, payload?: unknown, reconnect?: boolean, cause?: unknown}} details
   */
  constructor(message, details) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "ResumableHttpError";
    /** @type {number} */
    this.status = details.status;
    /** @type {string | null} */
    this.code = details.code ?? null;
    /** @type {unknown} */
    this.payload = details.payload;
    /** True when the failing request was a reconnect. */
    this.reconnect = details.reconnect === true;
  }
}

/**
 * @typedef {object} ReconnectOptions
 * @property {number} [maxAttempts] reconnects in a row that bring no new event before the run fails (default 5; 0 turns reconnecting off)
 * @property {number} [initialDelayMs] wait before the first reconnect (default 200), doubled for each further one
 * @property {number} [maxDelayMs] longest wait between reconnects (default 3000)
 */

/**
 * @param {ReconnectOptions | undefined} given
 * @returns {Required<ReconnectOptions>}
 */
function normalizeReconnect(given) {
  const merged = { ...DEFAULT_RECONNECT, ...(given ?? {}) };
  for (const key of Object.keys(DEFAULT_RECONNECT)) {
    const value = merged[key];
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new TypeError(`reconnect.${key} must be a number >= 0, got ${String(value)}`);
    }
  }
  merged.maxAttempts = Math.floor(merged.maxAttempts);
  merged.maxDelayMs = Math.max(merged.maxDelayMs, merged.initialDelayMs);
  return merged;
}

/**
 * Builds a subclass of `HttpAgentClass` that resumes cut streams.
 *
 * @template {new (config: any) => any} C
 * @param {C} HttpAgentClass `HttpAgent` of an @ag-ui/client version
 * @param {{transformHttpEventStream: Function, enforceOutgoingInput?: Function}} clientModule
 *   the module `HttpAgentClass` came from (its `transformHttpEventStream` parses
 *   the stream, so each version keeps its own parsing and validation)
 * @returns {C} the subclass; its constructor also takes `reconnect` (ReconnectOptions)
 */
export function resumable(HttpAgentClass, clientModule) {
  if (typeof HttpAgentClass !== "function") {
    throw new TypeError("resumable(HttpAgentClass, clientModule): HttpAgentClass must be a class");
  }
  const transform = clientModule?.transformHttpEventStream;
  if (typeof transform !== "function") {
    throw new TypeError(
      "resumable(HttpAgentClass, clientModule): clientModule must be the @ag-ui/client module (its transformHttpEventStream is used)",
    );
  }
  // 1.0.0 checks the outgoing input right before sending; older ones do not have this.
  const enforceOutgoing =
    typeof clientModule.enforceOutgoingInput === "function" ? clientModule.enforceOutgoingInput : null;

  class ResumableHttpAgent extends HttpAgentClass {
    /** @param {any} config the client's HttpAgentConfig plus `reconnect` */
    constructor(config) {
      super(config);
      this[OPTIONS] = normalizeReconnect(config?.reconnect);
      this[STATUS] = { lastEventId: null, reconnects: 0 };
      this[CONNECT_RUN_ID] = undefined;
      this[STOP_ON_ABORT] = config?.stopOnAbort !== false;
      this[LAST_RUN] = undefined;
    }

    /**
     * As HttpAgent's `abortRun` (the fetch is aborted), plus, unless the
     * agent was built with `stopOnAbort: false`, a request to the gateway
     * to stop the run: it cancels the run's A2A task at once. (A dropped
     * connection alone is not a stop: the gateway keeps the run going for a
     * reconnect.)
     */
    abortRun() {
      const run = this[LAST_RUN];
      super.abortRun();
      if (this[STOP_ON_ABORT] && run !== undefined) {
        this[LAST_RUN] = undefined;
        this.stopRun(run).catch(() => {});
      }
    }

    /**
     * Asks the gateway to stop a run (`POST <url>/stop`): its A2A task is
     * cancelled. Resolves with the HTTP status: 202 stopping, 204 no such
     * run (or it has ended), 409 the agent has not named the task yet.
     * @param {{threadId: string, runId?: string, headers?: any}} [run] the latest run by default
     * @returns {Promise<number>}
     */
    async stopRun(run = this[LAST_RUN]) {
      if (run === undefined) return 204;
      const headers = withHeader(run.headers, "Content-Type", "application/json");
      delete headers["Last-Event-ID"];
      const body = JSON.stringify(run.runId === undefined ? { threadId: run.threadId } : { threadId: run.threadId, runId: run.runId });
      const response = await globalThis.fetch(this.stopUrl(), { method: "POST", headers, body });
      await response.body?.cancel();
      return response.status;
    }

    /** The URL stop requests go to: `<url>/stop`. */
    stopUrl() {
      return `${String(this.url).replace(/\/+$/, "")}/stop`;
    }

    /**
     * The id of the last frame received by the latest stream (run or
     * connect), `null` before the first one.
     * @returns {string | null}
     */
    get lastEventId() {
      return this[STATUS]?.lastEventId ?? null;
    }

    /**
     * Reconnect requests the latest stream made.
     * @returns {number}
     */
    get reconnects() {
      return this[STATUS]?.reconnects ?? 0;
    }

    /** @returns {Required<ReconnectOptions>} */
    get reconnectOptions() {
      return { ...this[OPTIONS] };
    }

    /**
     * As `connectAgent` of @ag-ui/client, plus: a fresh abort controller per
     * call (as `runAgent` does), and `parameters.runId`, when given, names
     * the run to connect to (otherwise the thread's latest run).
     */
    connectAgent(parameters, subscriber) {
      this.abortController = parameters?.abortController ?? new AbortController();
      this[CONNECT_RUN_ID] = typeof parameters?.runId === "string" ? parameters.runId : undefined;
      return super.connectAgent(parameters, subscriber);
    }

    /** The URL connect requests go to: `<url>/connect`. */
    connectUrl() {
      return `${String(this.url).replace(/\/+$/, "")}/connect`;
    }

    run(input) {
      const agent = this;
      const source = {
        subscribe(observer) {
          return startStream(agent, "run", input, observer);
        },
      };
      return transform(source, this.debugLogger);
    }

    connect(input) {
      const agent = this;
      const source = {
        subscribe(observer) {
          return startStream(agent, "connect", input, observer);
        },
      };
      return transform(source, this.debugLogger);
    }

    clone() {
      const copy = super.clone();
      copy[OPTIONS] = { ...this[OPTIONS] };
      copy[STATUS] = { lastEventId: null, reconnects: 0 };
      copy[CONNECT_RUN_ID] = undefined;
      copy[STOP_ON_ABORT] = this[STOP_ON_ABORT];
      copy[LAST_RUN] = undefined;
      return copy;
    }
  }

  /**
   * Prepares the requests of one stream and starts reading. Returns the
   * subscription handed to transformHttpEventStream.
   */
  function startStream(agent, kind, input, observer) {
    const stream = new Stream(agent, observer);
    // Nothing is emitted synchronously from subscribe(): the work starts in
    // a microtask, like the client's own deferred fetch.
    queueMicrotask(() => {
      if (stream.closed) return;
      let plan;
      try {
        plan = kind === "run" ? runPlan(agent, input) : connectPlan(agent, input);
      } catch (error) {
        stream.fail(error);
        return;
      }
      stream.start(plan);
    });
    return { unsubscribe: () => stream.close() };
  }

  function runPlan(agent, input) {
    const sent = enforceOutgoing ? enforceOutgoing(input) : input;
    const init = agent.requestInit(sent);
    const url = agent.url;
    // The body is serialized once, by requestInit; reconnects send the same
    // string, which the gateway requires byte for byte.
    const resumableBody = typeof init.body === "string";
    if (typeof sent?.threadId === "string") {
      agent[LAST_RUN] = { threadId: sent.threadId, runId: typeof sent.runId === "string" ? sent.runId : undefined, headers: init.headers };
    }
    return {
      kind: "run",
      first: { url, init },
      signal: init.signal,
      allow204: false,
      resume({ lastEventId, forwardedData }) {
        if (!resumableBody) return null;
        if (lastEventId !== null) {
          return { url, init: { ...init, headers: withHeader(init.headers, "Last-Event-ID", lastEventId) } };
        }
        // Cut before the first id: the gateway may have started the run,
        // and connect with the run id the client chose finds it (204 when it
        // never started). Re-posting could start the run a second time.
        if (forwardedData || typeof sent?.threadId !== "string" || typeof sent?.runId !== "string") return null;
        return {
          url: agent.connectUrl(),
          init: { ...init, body: JSON.stringify({ threadId: sent.threadId, runId: sent.runId }) },
          viaConnect: true,
        };
      },
    };
  }

  function connectPlan(agent, input) {
    // requestInit gives the headers (the agent's, and a subclass's own); the
    // body is the connect body, not the RunAgentInput (whose runId is made
    // up by prepareRunAgentInput unless the caller passed one).
    const base = agent.requestInit(input);
    const runId = agent[CONNECT_RUN_ID];
    const body = JSON.stringify(runId === undefined ? { threadId: input.threadId } : { threadId: input.threadId, runId });
    const url = agent.connectUrl();
    const init = { ...base, body };
    return {
      kind: "connect",
      first: { url, init },
      signal: base.signal,
      allow204: true,
      resume({ lastEventId, forwardedData, startedRunId }) {
        if (lastEventId !== null) {
          // Pinned to the run being followed (its RUN_STARTED runId), so a
          // newer run of the thread does not turn the reconnect into a 409.
          const pinned = runId ?? startedRunId;
          const again = pinned === undefined ? body : JSON.stringify({ threadId: input.threadId, runId: pinned });
          return {
            url,
            init: { ...init, body: again, headers: withHeader(init.headers, "Last-Event-ID", lastEventId) },
          };
        }
        // Nothing with an id came yet: asking again replays from the start.
        return forwardedData ? null : { url, init };
      },
    };
  }

  /** One stream as the client sees it: possibly several HTTP responses. */
  class Stream {
    constructor(agent, observer) {
      this.agent = agent;
      this.observer = observer;
      this.closed = false;
      this.controller = new AbortController();
      this.userSignal = null;
      this.onUserAbort = null;
      this.reader = null;
      this.sleepTimer = null;
      this.sleepWake = null;
      this.headersSent = false;
      this.pending = new Uint8Array(0);
      this.scanFrom = 0;
      this.lastEventId = null;
      this.forwardedData = false;
      this.terminal = false;
      this.startedRunId = undefined;
      this.decoder = new TextDecoder();
      agent[STATUS] = { lastEventId: null, reconnects: 0 };
      this.status = agent[STATUS];
    }

    start(plan) {
      const signal = plan.signal;
      if (signal) {
        this.userSignal = signal;
        if (signal.aborted) {
          this.fail(abortReason(signal));
          return;
        }
        this.onUserAbort = () => {
          this.controller.abort(abortReason(signal));
          this.wake();
        };
        signal.addEventListener("abort", this.onUserAbort, { once: true });
      }
      this.loop(plan).catch((error) => this.fail(error));
    }

    get userAborted() {
      return this.userSignal?.aborted === true;
    }

    async loop(plan) {
      const options = this.agent[OPTIONS] ?? DEFAULT_RECONNECT;
      const fetchFn = typeof this.agent.fetch === "function"
        ? (url, init) => this.agent.fetch(url, init)
        : (url, init) => globalThis.fetch(url, init);
      let request = plan.first;
      let isFirst = true;
      let failures = 0;
      let delay = options.initialDelayMs;

      for (;;) {
        let cutError = null;
        let progressed = false;
        let response;
        try {
          response = await fetchFn(request.url, { ...request.init, signal: this.controller.signal });
        } catch (error) {
          if (this.closed) return;
          if (this.userAborted) return this.fail(abortReason(this.userSignal));
          // The first request failing outright is reported as HttpAgent
          // reports it: the request may never have arrived, or may have
          // started a run; guessing either way could double it.
          if (isFirst) return this.fail(error);
          cutError = error;
        }

        if (response !== undefined) {
          if (this.closed) return discardBody(response);
          const outcome = await this.answer(response, plan, request, isFirst);
          if (outcome === "done") return;
          if (outcome === "read") {
            const before = this.lastEventId;
            try {
              await this.read(response);
            } catch (error) {
              cutError = error;
            } finally {
              this.reader = null;
            }
            if (this.closed) return;
            if (this.userAborted) return this.fail(abortReason(this.userSignal));
            progressed = this.lastEventId !== before;
          }
        }

        // The body ended or broke: a partial frame left over is dropped; the
        // reconnect sends it again whole.
        this.pending = new Uint8Array(0);
        this.scanFrom = 0;
        if (this.terminal) return this.complete();

        if (progressed) {
          failures = 0;
          delay = options.initialDelayMs;
        }
        const next = plan.resume(this);
        if (next === null || failures >= options.maxAttempts) {
          const why = next === null ? "not-resumable" : options.maxAttempts === 0 ? "off" : "exhausted";
          return this.fail(cutFailure(cutError, this.lastEventId, failures, why));
        }
        failures += 1;
        await this.sleep(delay);
        if (this.closed) return;
        if (this.userAborted) return this.fail(abortReason(this.userSignal));
        delay = Math.min(delay * 2, options.maxDelayMs);
        request = next;
        isFirst = false;
        this.status.reconnects += 1;
      }
    }

    /**
     * Looks at a response's status. Returns "read" to read its body, or
     * "done" when the stream is finished (completed or failed).
     */
    async answer(response, plan, request, isFirst) {
      if (response.status === 204) {
        discardBody(response);
        if (plan.allow204 && isFirst) {
          // connect: the gateway keeps no run for this thread.
          this.emitHeaders(response);
          this.complete();
          return "done";
        }
        let what;
        if (request.viaConnect) what = "the stream broke off before its first event, and the gateway keeps no run with this run id";
        else if (plan.kind === "connect") what = "the gateway keeps no run for this thread any more";
        else what = "no content where an event stream was expected";
        this.fail(new ResumableHttpError(`HTTP 204: ${what}`, { status: 204, reconnect: !isFirst }));
        return "done";
      }
      if (!response.ok) {
        this.fail(await httpError(response, !isFirst));
        return "done";
      }
      if (!response.body) {
        this.fail(new Error("Failed to getReader() from response"));
        return "done";
      }
      this.emitHeaders(response);
      const contentType = response.headers.get("content-type") ?? "";
      if (contentType === PROTO_MEDIA_TYPE) {
        // Not an SSE stream: handed on as it is, without resuming.
        await this.passThrough(response);
        return "done";
      }
      return "read";
    }

    emitHeaders(response) {
      if (this.headersSent || this.closed) return;
      this.headersSent = true;
      this.observer.next({ type: "headers", status: response.status, headers: response.headers });
    }

    async read(response) {
      const reader = response.body.getReader();
      this.reader = reader;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done || this.closed) return;
          if (value && value.byteLength > 0) this.feed(value);
        }
      } finally {
        // Release without the rejection @ag-ui/client's own reader leaves
        // unhandled when the body has already failed.
        reader.cancel().catch(() => {});
      }
    }

    async passThrough(response) {
      const reader = response.body.getReader();
      this.reader = reader;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (this.closed) return;
          if (done) return this.complete();
          this.observer.next({ type: "data", data: value });
        }
      } catch (error) {
        if (this.closed) return;
        this.fail(this.userAborted ? abortReason(this.userSignal) : error);
      } finally {
        this.reader = null;
        reader.cancel().catch(() => {});
      }
    }

    /** Appends bytes and forwards every complete frame ("\n\n"-terminated). */
    feed(chunk) {
      let buffer;
      if (this.pending.byteLength === 0) {
        buffer = chunk;
      } else {
        buffer = new Uint8Array(this.pending.byteLength + chunk.byteLength);
        buffer.set(this.pending, 0);
        buffer.set(chunk, this.pending.byteLength);
      }
      let frameStart = 0;
      let forwardEnd = 0;
      for (let i = Math.max(this.scanFrom, 1); i < buffer.byteLength; i++) {
        if (buffer[i] === 0x0a && buffer[i - 1] === 0x0a) {
          this.inspect(buffer.subarray(frameStart, i + 1));
          frameStart = i + 1;
          forwardEnd = i + 1;
          i += 1; // the next frame starts after this blank line
        }
      }
      if (forwardEnd > 0) {
        // A copy: the client's parser may keep what it is given.
        this.observer.next({ type: "data", data: buffer.slice(0, forwardEnd) });
      }
      this.pending = buffer.slice(forwardEnd);
      this.scanFrom = this.pending.byteLength;
    }

    /** Reads one complete frame's `id` and event type. */
    inspect(frameBytes) {
      const text = this.decoder.decode(frameBytes);
      const data = [];
      let id = null;
      for (let line of text.split("\n")) {
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "" || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "id" && !value.includes("\0")) id = value;
        else if (field === "data") data.push(value);
      }
      if (id !== null) {
        this.lastEventId = id;
        this.status.lastEventId = id;
      }
      if (data.length === 0) return;
      this.forwardedData = true;
      let event;
      try {
        event = JSON.parse(data.join("\n"));
      } catch {
        return; // the client's parser reports it
      }
      const type = event?.type;
      if (type === "RUN_STARTED") {
        this.terminal = false;
        if (typeof event.runId === "string" && event.runId !== "") this.startedRunId = event.runId;
      } else if (TERMINAL_TYPES.has(type)) {
        this.terminal = true;
      }
    }

    sleep(ms) {
      return new Promise((resolve) => {
        this.sleepWake = resolve;
        this.sleepTimer = setTimeout(resolve, ms);
      }).finally(() => {
        clearTimeout(this.sleepTimer);
        this.sleepTimer = null;
        this.sleepWake = null;
      });
    }

    wake() {
      this.sleepWake?.();
    }

    complete() {
      if (this.closed) return;
      this.finish();
      this.observer.complete();
    }

    fail(error) {
      if (this.closed) return;
      this.finish();
      this.observer.error(error);
    }

    /** Unsubscribed (the client stopped listening): stop without a word. */
    close() {
      if (this.closed) return;
      this.finish();
    }

    finish() {
      this.closed = true;
      if (this.userSignal && this.onUserAbort) this.userSignal.removeEventListener("abort", this.onUserAbort);
      this.controller.abort();
      this.reader?.cancel().catch(() => {});
      this.reader = null;
      this.wake();
    }
  }

  return ResumableHttpAgent;
}

/** `headers` (object, Headers or pairs) with `name` set to `value`, as a plain object. */
function withHeader(headers, name, value) {
  const out = {};
  const lower = name.toLowerCase();
  const put = (key, val) => {
    if (String(key).toLowerCase() !== lower) out[key] = val;
  };
  if (headers == null) {
    // nothing
  } else if (typeof headers.forEach === "function" && !Array.isArray(headers)) {
    headers.forEach((val, key) => put(key, val));
  } else if (Array.isArray(headers)) {
    for (const [key, val] of headers) put(key, val);
  } else {
    for (const [key, val] of Object.entries(headers)) put(key, val);
  }
  out[name] = value;
  return out;
}

function abortReason(signal) {
  return signal?.reason ?? new DOMException("This operation was aborted", "AbortError");
}

function discardBody(response) {
  try {
    response.body?.cancel().catch(() => {});
  } catch {
    // already used or locked
  }
}

async function httpError(response, reconnect) {
  let text = "";
  try {
    text = await response.text();
  } catch {
    // the body broke off; the status says enough
  }
  let payload = text;
  if ((response.headers.get("content-type") ?? "").includes("application/json")) {
    try {
      payload = JSON.parse(text);
    } catch {
      // keep the text
    }
  }
  const code = typeof payload === "object" && payload !== null ? payload.error?.code ?? null : null;
  const shown = typeof payload === "string" ? payload : JSON.stringify(payload);
  const prefix = reconnect ? "reconnect failed: " : "";
  return new ResumableHttpError(`${prefix}HTTP ${response.status}: ${shown}`, {
    status: response.status,
    code: typeof code === "string" ? code : null,
    payload,
    reconnect,
  });
}

function cutFailure(cause, lastEventId, attempts, why) {
  const where = cause
    ? `the stream broke off (${cause?.message ?? cause})`
    : "the stream ended before RUN_FINISHED or RUN_ERROR";
  let reason;
  if (why === "off") reason = "and reconnecting is off (reconnect.maxAttempts is 0)";
  else if (why === "exhausted") reason = `and ${attempts} reconnect${attempts === 1 ? "" : "s"} in a row brought no new event`;
  else if (lastEventId === null) reason = "and cannot be resumed: no event id was received";
  else reason = "and cannot be resumed";
  const error = new Error(`${where} ${reason}`, cause ? { cause } : undefined);
  error.name = "StreamCutError";
  error.lastEventId = lastEventId;
  return error;
}
