// Shared start of the Node framework servers (the counterpart of _serve.py): stdout carries only
// the READY line (everything a framework prints goes to stderr), a fetch guard refuses every URL
// that is not loopback (frameworks fetch model lists and announcements on start), and the
// command line is `--port N` (0 picks a free port) and `--host`.
import { parseArgs } from 'node:util';

/** Isolates the process as above; returns the arguments and `ready(port)`, which prints the line. */
export function isolate() {
    const realStdoutWrite = process.stdout.write.bind(process.stdout);
    process.stdout.write = process.stderr.write.bind(process.stderr);
    for (const level of ['log', 'info', 'debug']) {
        console[level] = (...args) => console.error(...args);
    }
    const realFetch = globalThis.fetch;
    globalThis.fetch = async (input, init) => {
        const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
        if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
            throw new TypeError(`network access refused in the test peer: ${url.origin}`);
        }
        return realFetch(input, init);
    };
    const { values: args } = parseArgs({
        options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' } },
    });
    return { args, ready: (port) => realStdoutWrite(`READY ${port}\n`) };
}
