#!/usr/bin/env node
// A small static server for the page: index.html, style.css and the bundle
// in dist/. Nothing else is served (no directory listing, no other files).
//
//   node serve.mjs [--port 5173] [--host 127.0.0.1]
//
// then open http://localhost:5173/?gateway=http://127.0.0.1:8080
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));

const FILES = {
    "/": ["index.html", "text/html; charset=utf-8"],
    "/index.html": ["index.html", "text/html; charset=utf-8"],
    "/style.css": ["style.css", "text/css; charset=utf-8"],
    "/dist/app.js": ["dist/app.js", "text/javascript; charset=utf-8"],
    "/dist/app.js.map": ["dist/app.js.map", "application/json"],
};

/** Serves the page on host:port (0: a free port); resolves with the server. */
export function serve({ port = 0, host = "127.0.0.1" } = {}) {
    const server = createServer(async (req, res) => {
        const { pathname } = new URL(req.url, "http://page");
        if (pathname === "/favicon.ico") {
            res.writeHead(204).end();
            return;
        }
        const file = FILES[pathname];
        if (req.method !== "GET" || !file) {
            res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
            return;
        }
        try {
            const body = await readFile(path.join(HERE, file[0]));
            res.writeHead(200, { "Content-Type": file[1], "Cache-Control": "no-store" }).end(body);
        } catch {
            res.writeHead(500, { "Content-Type": "text/plain" }).end(`${file[0]} is missing: run node build.mjs\n`);
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
    const port = Number(flag("--port", "5173"));
    const host = flag("--host", "127.0.0.1");
    const server = await serve({ port, host });
    const { port: bound } = server.address();
    console.log(`page on http://localhost:${bound}/?gateway=http://127.0.0.1:8080`);
    console.log(`(start the gateway with: agui-gateway demo --cors-origin http://localhost:${bound} --cors-credentials)`);
}
