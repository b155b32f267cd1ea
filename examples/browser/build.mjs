#!/usr/bin/env node
// Bundles app.js with @ag-ui/client into dist/app.js (git-ignored), for the
// browser: one ES module, no CDN. `node build.mjs`; the test builds first.
import { build } from "esbuild";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));

export async function buildApp() {
    const result = await build({
        entryPoints: [path.join(HERE, "app.js")],
        outfile: path.join(HERE, "dist", "app.js"),
        bundle: true,
        format: "esm",
        platform: "browser",
        target: "es2022",
        sourcemap: true,
        minify: true,
        logLevel: "warning",
        metafile: true,
    });
    const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    return { outfile: path.join(HERE, "dist", "app.js"), bytes };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const { outfile, bytes } = await buildApp();
    console.log(`built ${path.relative(process.cwd(), outfile)} (${Math.round(bytes / 1024)} KiB with its source map)`);
}
