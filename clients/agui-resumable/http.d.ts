// Types of agui-gateway-resumable/http.
import type { HttpAgent, HttpAgentConfig } from "@ag-ui/client";
import type { ResumableClass, ResumableConfig } from "./index.js";

export { resumable, ResumableHttpError, DEFAULT_RECONNECT } from "./index.js";
export type {
  ReconnectOptions,
  ResumableConfig,
  ResumableConnectParameters,
  ResumableMembers,
  StreamCutError,
} from "./index.js";

/** Config of the ready-made class: the client's HttpAgentConfig plus `reconnect`. */
export type ResumableHttpAgentConfig = HttpAgentConfig & ResumableConfig;

/** `HttpAgent` of `@ag-ui/client` that resumes cut streams through agui-gateway. */
export declare const ResumableHttpAgent: ResumableClass<typeof HttpAgent>;
export type ResumableHttpAgent = InstanceType<typeof ResumableHttpAgent>;
export default ResumableHttpAgent;
