// Types of agui-gateway-resumable (hand-written; the code is index.mjs).
// Self-contained on purpose: the factory works with any @ag-ui/client
// version, also one installed under an alias, so nothing here imports
// "@ag-ui/client". The ready-made class is typed in http.d.ts.

/** When and how often a cut stream is reconnected. */
export interface ReconnectOptions {
  /**
   * Reconnects in a row that bring no new event before the run fails.
   * A reconnect that delivers new events starts the count again. 0 turns
   * reconnecting off. Default 5.
   */
  maxAttempts?: number;
  /** Wait before the first reconnect, in ms; doubled for each further one. Default 200. */
  initialDelayMs?: number;
  /** Longest wait between reconnects, in ms. Default 3000. */
  maxDelayMs?: number;
}

/** What the resumable class adds to the client's HttpAgentConfig. */
export interface ResumableConfig {
  reconnect?: ReconnectOptions;
  /**
   * `abortRun()` also asks the gateway to stop the run (`POST <url>/stop`),
   * which cancels its A2A task at once. Default true. (A dropped connection
   * alone is not a stop: the gateway keeps the run going for a reconnect.)
   */
  stopOnAbort?: boolean;
}

/** `reconnect` defaults: `{ maxAttempts: 5, initialDelayMs: 200, maxDelayMs: 3000 }`. */
export declare const DEFAULT_RECONNECT: Readonly<Required<ReconnectOptions>>;

/**
 * A non-2xx answer (first request or reconnect), or a 204 where an event
 * stream was needed. The message starts with `HTTP <status>: `.
 */
export declare class ResumableHttpError extends Error {
  constructor(
    message: string,
    details: { status: number; code?: string | null; payload?: unknown; reconnect?: boolean; cause?: unknown },
  );
  name: "ResumableHttpError";
  /** The HTTP status, e.g. 409, 410, 204. */
  status: number;
  /** The gateway's `error.code` (`RUN_MISMATCH`, `RUN_NOT_RESUMABLE`, …), or null. */
  code: string | null;
  /** The response body: parsed JSON when the answer was JSON, else the text. */
  payload: unknown;
  /** True when the failing request was a reconnect. */
  reconnect: boolean;
}

/**
 * The error a run fails with when its stream broke off and could not be
 * resumed (`name` is `"StreamCutError"`); `cause` is the network error, if any.
 */
export interface StreamCutError extends Error {
  name: "StreamCutError";
  lastEventId: string | null;
}

/** `connectAgent` parameters: `runId` names the run to connect to. */
export interface ResumableConnectParameters {
  /** The run to connect to; without it, the thread's latest run. */
  runId?: string;
  abortController?: AbortController;
  [key: string]: unknown;
}

/** What the resumable subclass adds to an HttpAgent. */
export interface ResumableMembers {
  /** Id of the last frame the latest stream received (`<runkey>.<n>`), or null. */
  readonly lastEventId: string | null;
  /** Reconnect requests the latest stream made. */
  readonly reconnects: number;
  /** The reconnect options in force (defaults filled in). */
  readonly reconnectOptions: Required<ReconnectOptions>;
  /** `<url>/connect`, where connect requests go. */
  connectUrl(): string;
  /** `<url>/stop`, where stop requests go. */
  stopUrl(): string;
  /**
   * Asks the gateway to stop a run (the latest by default): its A2A task is
   * cancelled. Resolves with the HTTP status: 202 stopping, 204 no such run
   * (or it has ended), 409 the agent has not named the task yet.
   */
  stopRun(run?: { threadId: string; runId?: string; headers?: unknown }): Promise<number>;
  /**
   * Follows the thread's latest run (or `parameters.runId`) from its first
   * event; resolves with no events when the gateway keeps no run (204).
   */
  connectAgent(parameters?: ResumableConnectParameters, subscriber?: object): Promise<{ result: unknown; newMessages: unknown[] }>;
}

/** What `resumable()` needs of an HttpAgent instance (any @ag-ui/client 0.0.48 … 1.x). */
export interface HttpAgentLike {
  url: string;
  headers: Record<string, string>;
  abortController: AbortController;
  runAgent(...args: any[]): Promise<any>;
  connectAgent(...args: any[]): Promise<any>;
  abortRun(): void;
  clone(): any;
}

/** Any HttpAgent class (of @ag-ui/client 0.0.48 … 1.x). */
export type HttpAgentClass = new (config: any) => HttpAgentLike;

/** The client module `resumable()` needs: the one `HttpAgentClass` comes from. */
export interface ClientModule {
  transformHttpEventStream: (source$: any, ...rest: any[]) => any;
  enforceOutgoingInput?: (input: any) => any;
}

/** The class `resumable()` returns. */
export interface ResumableClass<C extends HttpAgentClass> {
  new (config: ConstructorParameters<C>[0] & ResumableConfig): InstanceType<C> & ResumableMembers;
  prototype: InstanceType<C> & ResumableMembers;
}

/**
 * A subclass of `HttpAgentClass` that reconnects with `Last-Event-ID` when
 * the stream breaks off before RUN_FINISHED/RUN_ERROR, and implements
 * `connect()` (`POST <url>/connect`). `clientModule` is the module the class
 * came from (e.g. `import * as client from "@ag-ui/client"`).
 */
export declare function resumable<C extends HttpAgentClass>(
  HttpAgentClass: C,
  clientModule: ClientModule,
): ResumableClass<C>;
