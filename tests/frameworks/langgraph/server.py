"""Runs `langgraph dev` on the graph in this folder, on 127.0.0.1, with the test-server interface.

    .cache/venv-fw-langgraph/bin/python tests/frameworks/langgraph/server.py --port 0

Picks a free port when given 0, starts `langgraph dev --no-browser --no-reload --allow-blocking`
(in-memory runtime, no telemetry or tracing), waits at most 60 s for GET /ok, then prints
exactly one line `READY <port>`. SIGTERM/SIGINT stop the server and its children (status 0).
A2UI v0.9 is on (`A2A_A2UI_ENABLED=true`, `A2A_A2UI_TOOL_CALL_RESULTS=show_booking_form`).
The A2A endpoint is `/a2a/<assistant_id>`; the default assistant of graph `agent` has the id
uuid5(6ba7b821-9dad-11d1-80b4-00c04fd430c8, "agent") = fe096781-5601-53d2-b2f6-0d3403f7e9ca
(also printed on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
READY_TIMEOUT = 60.0
NAMESPACE_GRAPH = uuid.UUID('6ba7b821-9dad-11d1-80b4-00c04fd430c8')


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def is_up(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f'http://{host}:{port}/ok', timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--host', default=os.environ.get('HOST', '127.0.0.1'))
    ap.add_argument('--port', type=int, default=int(os.environ.get('PORT', '0') or 0))
    args = ap.parse_args()
    port = args.port or free_port(args.host)

    env = dict(os.environ)
    env.update({
        'LANGGRAPH_CLI_NO_ANALYTICS': '1',
        'LANGSMITH_TRACING': 'false',
        'LANGCHAIN_TRACING_V2': 'false',
        'LANGSMITH_API_KEY': '',
        'PYTHONUNBUFFERED': '1',
        # A2UI v0.9 (scenario `a2ui` in graph.py): the JSON result of show_booking_form becomes
        # A2UI DataParts, but only for requests that activate the A2UI extension by header.
        'A2A_A2UI_ENABLED': 'true',
        'A2A_A2UI_TOOL_CALL_RESULTS': 'show_booking_form',
    })
    langgraph = os.path.join(os.path.dirname(sys.executable), 'langgraph')
    # `langgraph dev` keeps its in-memory state in ./.langgraph_api and resolves graph paths
    # against its cwd: run it in a scratch folder (removed on exit) with a copy of
    # langgraph.json whose paths point here, so nothing is written into the repository.
    scratch = tempfile.mkdtemp(prefix='langgraph-dev-')
    with open(os.path.join(HERE, 'langgraph.json'), encoding='utf-8') as f:
        config = json.load(f)
    config['dependencies'] = [HERE]
    config['graphs'] = {gid: os.path.join(HERE, spec[2:] if spec.startswith('./') else spec)
                        for gid, spec in config['graphs'].items()}
    config_path = os.path.join(scratch, 'langgraph.json')
    with open(config_path, 'w', encoding='utf-8') as f:
        json.dump(config, f)
    cmd = [langgraph, 'dev', '--host', args.host, '--port', str(port), '--no-browser',
           '--no-reload', '--allow-blocking', '--config', config_path]
    # Its own process group, so stopping it also stops any worker it spawned.
    child = subprocess.Popen(cmd, cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                             stdout=sys.stderr, stderr=sys.stderr, start_new_session=True)
    stopping: list[int] = []

    def stop(signum, _frame) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def shutdown() -> None:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)

    deadline = time.monotonic() + READY_TIMEOUT
    while not stopping and child.poll() is None and time.monotonic() < deadline:
        if is_up(args.host, port):
            break
        time.sleep(0.25)
    else:
        shutdown()
        if not stopping:
            print(f'langgraph dev did not answer /ok within {READY_TIMEOUT:.0f} s '
                  f'(exit status {child.returncode})', file=sys.stderr)
            return 1
        return 0

    print(f'A2A endpoint: /a2a/{uuid.uuid5(NAMESPACE_GRAPH, "agent")}', file=sys.stderr)
    sys.stdout.write(f'READY {port}\n')
    sys.stdout.flush()
    while not stopping and child.poll() is None:
        time.sleep(0.2)
    died = child.poll() is not None and not stopping
    shutdown()
    return 1 if died else 0


if __name__ == '__main__':
    sys.exit(main())
