#!/usr/bin/env node
// A static server for the page: index.html and what build.mjs wrote in dist/
// (app.js, app.css, chunks/*.js). Nothing else: no directory listing, no
// path outside those names.
//
//   node serve.mjs [--port 5174] [--host 127.0.0.1]
//
// then open http://localhost:5174/?runtime=http://127.0.0.1:8080/copilotkit
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const JS = "text/javascript; charset=utf-8";

/** The file and content type for a request path, or null. */
function resolveFile(pathname) {
    if (pathname === "/" || pathname === "/index.html") return ["index.html", "text/html; charset=utf-8"];
    if (pathname === "/dist/app.js") return ["dist/app.js", JS];
    if (pathname === "/dist/app.css") return ["dist/app.css", "text/css; charset=utf-8"];
    // esbuild's chunk names: [name]-[hash].js, letters, digits, `_`, `-`, `.`.
    const chunk = /^\/dist\/chunks\/([A-Za-z0-9_-][A-Za-z0-9_.-]{0,200}\.js)$/.exec(pathname);
    if (chunk && !chunk[1].includes("..")) return [`dist/chunks/${chunk[1]}`, JS];
    return null;
}

/** Serves the page on host:port (0: a free port); resolves with the server. */
export function serve({ port = 0, host = "127.0.0.1" } = {}) {
    const server = createServer(async (req, res) => {
        const { pathname } = new URL(req.url, "http://page");
        if (pathname === "/favicon.ico") {
            res.writeHead(204).end();
            return;
        }
        const file = resolveFile(pathname);
        if (req.method !== "GET" || !file) {
            res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
            return;
        }
        try {
            const body = await readFile(path.join(HERE, file[0]));
            res.writeHead(200, { "Content-Type": file[1], "Cache-Control": "no-store" }).end(body);
        } catch {
            res.writeHead(404, { "Content-Type": "text/plain" }).end(`${file[0]} is missing: run node build.mjs\n`);
        }
    });
    return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => resolve(server));
    });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    const flag = (name, fallback) => {
        const i = args.indexOf(name);
        return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
    };
    const server = await serve({ port: Number(flag("--port", "5174")), host: flag("--host", "127.0.0.1") });
    const { port } = server.address();
    console.log(`page on http://localhost:${port}/?runtime=http://127.0.0.1:8080/copilotkit`);
    console.log("(the gateway: agui-gateway demo, which lets pages from this machine call it)");
}
