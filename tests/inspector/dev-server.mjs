// The inspector's page from the source folder, in front of a running gateway:
// edit crates/agui-gateway/src/inspect/{index.html,inspector.js,inspector.css}
// and reload, no rebuild (the binary has them compiled in). Everything else
// (v1/agents, inspect/agents/{name}/run, ...) is passed to the gateway as it
// is, streamed both ways. The page gets the gateway's own CSP, read from
// inspect/mod.rs, so what works here works from the binary.
//
//   node tests/inspector/dev-server.mjs --gateway http://127.0.0.1:18081 [--listen 127.0.0.1:0]
//
// Loopback only. Prints "inspector dev server listening on http://HOST:PORT".
import { readFileSync } from "node:fs";
import http from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "..", "..", "crates", "agui-gateway", "src", "inspect");

function arg(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 && process.argv[at + 1] ? process.argv[at + 1] : fallback;
}

const gateway = new URL(arg("--gateway", "http://127.0.0.1:18081"));
const [host, port] = arg("--listen", "127.0.0.1:0").split(/:(?=[0-9]+$)/);
if (!["127.0.0.1", "localhost", "::1"].includes(host)) {
  console.error("dev-server: loopback only");
  process.exit(2);
}

function policy() {
  const rust = readFileSync(join(source, "mod.rs"), "utf8");
  const found = /const POLICY: &str = "([^"]+)";/.exec(rust);
  if (!found) throw new Error("no POLICY in inspect/mod.rs");
  return found[1];
}

const assets = {
  "/inspect": ["index.html", "text/html; charset=utf-8"],
  "/inspect/inspector.js": ["inspector.js", "text/javascript; charset=utf-8"],
  "/inspect/inspector.css": ["inspector.css", "text/css; charset=utf-8"],
};

const server = http.createServer((req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  const asset = req.method === "GET" ? assets[path] : undefined;
  if (asset) {
    // Read at every request: an edit shows on reload.
    const body = readFileSync(join(source, asset[0]));
    res.writeHead(200, {
      "content-type": asset[1],
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      "content-security-policy": policy(),
      "referrer-policy": "no-referrer",
    });
    res.end(body);
    return;
  }
  const headers = { ...req.headers, host: gateway.host };
  const upstream = http.request(
    { host: gateway.hostname, port: gateway.port, method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "DEV_SERVER_UPSTREAM", message: err.message } }));
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});

server.listen(Number(port), host, () => {
  const { address, port: bound } = server.address();
  const shown = address.includes(":") ? `[${address}]` : address;
  console.log(`inspector dev server listening on http://${shown}:${bound} (gateway ${gateway.origin})`);
});

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)));
