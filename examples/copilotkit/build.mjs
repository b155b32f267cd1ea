#!/usr/bin/env node
// Bundles app.jsx (React 19, @copilotkit/react-core's v2 components) into
// dist/app.js and its styles into dist/app.css (both git-ignored): no CDN,
// no dev server. `node build.mjs`; the test builds first.
import { build } from "esbuild";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));

export async function buildPage() {
    const result = await build({
        entryPoints: { app: path.join(HERE, "app.jsx") },
        outdir: path.join(HERE, "dist"),
        bundle: true,
        // Code highlighting (shiki), diagrams (mermaid) and maths load only
        // when a message needs them.
        splitting: true,
        chunkNames: "chunks/[name]-[hash]",
        format: "esm",
        platform: "browser",
        target: "es2022",
        jsx: "automatic",
        define: { "process.env.NODE_ENV": '"production"' },
        // The styles reference fonts and images; CopilotChat renders without them.
        loader: { ".woff": "empty", ".woff2": "empty", ".ttf": "empty", ".svg": "dataurl", ".png": "dataurl" },
        minify: true,
        logLevel: "warning",
        metafile: true,
    });
    const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    return { outdir: path.join(HERE, "dist"), bytes };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const { outdir, bytes } = await buildPage();
    console.log(`built ${path.relative(process.cwd(), outdir)}/app.js and app.css (${Math.round(bytes / 1024)} KiB)`);
}
