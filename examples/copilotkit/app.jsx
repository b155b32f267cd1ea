// A CopilotKit page whose runtimeUrl is agui-gateway's /copilotkit: no
// CopilotKit runtime between the page and the gateway. The gateway keeps the
// thread (its journal, or the agent's own tasks), so a reload, a restarted
// gateway or another replica shows the conversation again.
//
// Query parameters: runtime (default http://127.0.0.1:8080/copilotkit), agent
// (default assistant, the demo's agent), transport=single (the single-route
// envelope instead of REST routes), thread (otherwise the one this browser
// used last, kept in localStorage).
import { createRoot } from "react-dom/client";
import { CopilotChat, CopilotKitProvider, useFrontendTool } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { z } from "zod";

const params = new URLSearchParams(location.search);
const runtimeUrl = params.get("runtime") ?? "http://127.0.0.1:8080/copilotkit";
const agentId = params.get("agent") ?? "assistant";
const single = params.get("transport") === "single";

// One thread per agent in this browser, until "New thread".
const threadKey = `agui-gateway-example:${agentId}:thread`;
const threadId = params.get("thread") ?? localStorage.getItem(threadKey) ?? crypto.randomUUID();
localStorage.setItem(threadKey, threadId);

document.getElementById("runtime").textContent = runtimeUrl;
document.getElementById("thread").textContent = threadId;
document.getElementById("new-thread").addEventListener("click", () => {
    localStorage.removeItem(threadKey);
    const url = new URL(location.href);
    url.searchParams.delete("thread");
    location.assign(url);
});

// A tool the page runs itself: the agent asks for it by name (the gateway
// passes the page's tools on to the agent), CopilotKit runs the handler and
// sends the result back in a follow-up run.
let toolRuns = 0;
function WeatherTool() {
    useFrontendTool({
        name: "get_weather",
        description: "Get the weather for a city",
        parameters: z.object({ city: z.string() }),
        handler: async ({ city }) => {
            toolRuns += 1;
            document.getElementById("tool-runs").textContent = String(toolRuns);
            return JSON.stringify({ temperature: 21, city });
        },
    });
    return null;
}

createRoot(document.getElementById("app")).render(
    <CopilotKitProvider runtimeUrl={runtimeUrl} useSingleEndpoint={single} showDevConsole={false}>
        <WeatherTool />
        <CopilotChat agentId={agentId} threadId={threadId} />
    </CopilotKitProvider>,
);
