// The ready-made class: `resumable()` applied to the `@ag-ui/client` peer
// dependency. Kept apart from index.mjs so that the factory alone loads
// where `@ag-ui/client` is not resolvable under that name (an npm alias,
// or a copy bundled elsewhere).
import * as client from "@ag-ui/client";
import { resumable } from "./index.mjs";

export { resumable, ResumableHttpError, DEFAULT_RECONNECT } from "./index.mjs";

/** `HttpAgent` of `@ag-ui/client` that resumes cut streams through agui-gateway. */
export const ResumableHttpAgent = resumable(client.HttpAgent, client);
export default ResumableHttpAgent;
