#!/usr/bin/env python3
"""Records the A2A SSE streams of real agent-framework servers driven by scripted models.

    python3 tests/frameworks/record.py                      # record everything
    python3 tests/frameworks/record.py --only adk strands   # some frameworks
    python3 tests/frameworks/record.py --serve adk          # only start one server
    python3 tests/frameworks/record.py --serve strands --mode compliant

Standard library only. Each server runs from its venv under <repo>/.cache/venv-fw-<name>
(installed by tests/frameworks/setup.sh), on 127.0.0.1 and a free port. Every response body
is written byte for byte to recordings/<framework>-<variant>-<scenario>[-followup].sse and the
request body next to it as .request.json. Exits non-zero if any server fails to start or any
request fails (HTTP error, JSON-RPC error, timeout, or no event).

`--serve` starts one server, prints the server's own `READY <port>` line, and stops the server
when it gets SIGTERM/SIGINT (status 0). The A2A endpoint path is printed on stderr.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECORDINGS = os.path.join(HERE, 'recordings')

REQUEST_TIMEOUT = 30.0   # seconds for one whole request, body included
STOP_TIMEOUT = 10.0      # seconds a server gets to exit after SIGTERM

ADK_EXT = 'https://google.github.io/adk-docs/a2a/a2a-extension/'
# langgraph-api activates A2UI only when one of these headers names exactly this URI.
A2UI_V09_EXT = 'https://a2ui.org/a2a-extension/a2ui/v0.9'


def venv_python(name: str) -> str:
    return os.path.join(ROOT, '.cache', f'venv-fw-{name}', 'bin', 'python')


# --------------------------------------------------------------------------------------------
# Requests


def text_message(message_id: str, text: str, metadata: dict | None = None) -> dict:
    part = {'kind': 'text', 'text': text}
    if metadata is not None:
        part['metadata'] = metadata
    return {'kind': 'message', 'role': 'user', 'messageId': message_id, 'parts': [part]}


def rpc03(request_id: str, message: dict) -> dict:
    return {'jsonrpc': '2.0', 'id': request_id, 'method': 'message/stream',
            'params': {'message': message, 'configuration': {'acceptedOutputModes': ['text']}}}


def rpc10(request_id: str, message: dict) -> dict:
    """A2A 1.0 SendStreamingMessage: parts without `kind`, ROLE_USER."""
    parts = []
    for part in message['parts']:
        part = {k: v for k, v in part.items() if k != 'kind'}
        parts.append(part)
    msg = {'role': 'ROLE_USER', 'messageId': message['messageId'], 'parts': parts}
    for key in ('taskId', 'contextId', 'metadata'):
        if key in message:
            msg[key] = message[key]
    return {'jsonrpc': '2.0', 'id': request_id, 'method': 'SendStreamingMessage',
            'params': {'message': msg, 'configuration': {'acceptedOutputModes': ['text']}}}


# --------------------------------------------------------------------------------------------
# SSE


def sse_events(body: bytes) -> list[Any]:
    """The JSON payloads of the `data:` fields of an SSE body (CRLF, CR or LF framing)."""
    text = body.decode('utf-8', errors='replace').replace('\r\n', '\n').replace('\r', '\n')
    events = []
    for block in text.split('\n\n'):
        data = [line[5:].lstrip(' ') if line.startswith('data:') else None
                for line in block.split('\n')]
        data = [d for d in data if d is not None]
        if data:
            try:
                events.append(json.loads('\n'.join(data)))
            except ValueError:
                events.append({'unparsed': '\n'.join(data)})
    if not events and '\x1e' in text:
        # Not SSE: JSON texts each ended by an ASCII record separator (Mastra 0.24's
        # message/stream body, Content-Type text/plain).
        for record in text.split('\x1e'):
            if record.strip():
                try:
                    events.append(json.loads(record))
                except ValueError:
                    events.append({'unparsed': record})
    return events


def _find_ids(result: dict) -> tuple[str | None, str | None]:
    """taskId/contextId of one streamed result, in any of the dialects seen."""
    if not isinstance(result, dict):
        return None, None
    for wrapper in ('task', 'statusUpdate', 'artifactUpdate', 'message'):
        if isinstance(result.get(wrapper), dict):
            inner = result[wrapper]
            task_id = inner.get('id') if wrapper == 'task' else inner.get('taskId')
            return task_id, inner.get('contextId')
    if result.get('kind') == 'task':
        return result.get('id'), result.get('contextId')
    return result.get('taskId'), result.get('contextId')


def task_and_context(events: list[Any]) -> tuple[str, str]:
    for event in events:
        task_id, context_id = _find_ids(event.get('result') if isinstance(event, dict) else None)
        if task_id and context_id:
            return task_id, context_id
    raise RuntimeError('no taskId/contextId in the first response')


def walk(value: Any):
    """Every dict inside a JSON value, depth first."""
    stack = [value]
    count = 0
    while stack and count < 100000:
        count += 1
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


# --------------------------------------------------------------------------------------------
# HTTP


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POSTs and reads the whole (streamed) body within REQUEST_TIMEOUT seconds."""
    deadline = time.monotonic() + REQUEST_TIMEOUT
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=REQUEST_TIMEOUT)
    try:
        all_headers = {'Content-Type': 'application/json', 'Accept': 'text/event-stream'}
        all_headers.update(headers)
        conn.request('POST', path, body=body, headers=all_headers)
        resp = conn.getresponse()
        chunks = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f'response not finished within {REQUEST_TIMEOUT:.0f} s')
            if conn.sock is not None:
                conn.sock.settimeout(remaining)
            chunk = resp.read1(65536)
            if not chunk:
                break
            chunks.append(chunk)
        return resp.status, b''.join(chunks)
    finally:
        conn.close()


def get_json(port: int, path: str, method: str = 'GET', body: Any = None) -> Any:
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=REQUEST_TIMEOUT)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={'Content-Type': 'application/json'})
        resp = conn.getresponse()
        payload = resp.read()
        if resp.status != 200:
            raise RuntimeError(f'{method} {path}: HTTP {resp.status}: {payload[:200]!r}')
        return json.loads(payload)
    finally:
        conn.close()


# --------------------------------------------------------------------------------------------
# Frameworks


@dataclass
class Recording:
    variant: str                      # part of the file name ('' for none)
    scenario: str                     # file-name scenario
    text: str                         # the user's text
    dialect: str = '03'               # '03' message/stream, '10' SendStreamingMessage
    headers: dict[str, str] = field(default_factory=dict)
    # Builds the follow-up message parts (and metadata) from the first response's events.
    followup: Callable[[list[Any]], dict] | None = None
    # Metadata of the user's text part (CrewAI reads a JSON schema from it).
    part_metadata: dict | None = None


@dataclass
class Framework:
    name: str
    venv: str
    modes: dict[str, list[str]]       # mode -> extra server arguments ('' is the default mode)
    recordings: dict[str, list[Recording]]  # mode -> recordings
    ready_timeout: float = 60.0
    # The A2A path, given the port (LangGraph looks its assistant up).
    a2a_path: Callable[[int], str] = lambda port: '/'
    # A Node server (`<name>/server.mjs`, packages in `<name>/node_modules`) instead of Python.
    node: bool = False

    def command(self, mode: str) -> list[str]:
        if self.node:
            script = os.path.join(HERE, self.name, 'server.mjs')
            return ['node', script, '--port', '0', *self.modes[mode]]
        script = os.path.join(HERE, self.name, 'server.py')
        return [venv_python(self.venv), script, '--port', '0', *self.modes[mode]]


def adk_followup(events: list[Any]) -> dict:
    return {'parts': [{'kind': 'data',
                       'data': {'id': 'call-approve', 'name': 'ask_approval',
                                'response': {'approved': True}},
                       'metadata': {'adk_type': 'function_response'}}]}


def strands_followup(events: list[Any]) -> dict:
    for item in walk(events):
        if isinstance(item.get('interrupts'), list) and item['interrupts']:
            interrupt_id = item['interrupts'][0]['interruptId']
            return {'parts': [{'kind': 'data', 'data': {'interruptResponse': {
                'interruptId': interrupt_id, 'response': 'yes'}}}]}
    raise RuntimeError('no interrupts data part in the first response')


def langgraph_followup(events: list[Any]) -> dict:
    return {'parts': [{'kind': 'data', 'data': {'resume': {'approved': True}}}]}


AGENTSTACK_APPROVAL = 'https://a2a-extensions.agentstack.beeai.dev/interactions/approval/v1'


def agentstack_followup(events: list[Any]) -> dict:
    # What agentstack-sdk's ApprovalExtensionClient.create_response_message sends: no parts.
    return {'parts': [], 'metadata': {AGENTSTACK_APPROVAL: {'decision': 'approve'}}}


# What CrewAI's own A2A client puts on the text part when it wants structured output
# (crewai/a2a/utils/delegation.py: mimeType + the response model's JSON schema).
CREWAI_SCHEMA = {'mimeType': 'application/json', 'schema': {
    'title': 'Weather', 'type': 'object',
    'properties': {'city': {'type': 'string'}, 'temp_c': {'type': 'integer'},
                   'sky': {'type': 'string'}},
    'required': ['city', 'temp_c', 'sky']}}


def langgraph_path(port: int) -> str:
    assistants = get_json(port, '/assistants/search', 'POST', {'graph_id': 'agent', 'limit': 10})
    if not assistants:
        raise RuntimeError('no assistant for graph "agent"')
    return f"/a2a/{assistants[0]['assistant_id']}"


def _adk_recordings() -> list[Recording]:
    out = []
    for variant, headers in (('legacy', {}),
                             ('ext', {'X-A2A-Extensions': ADK_EXT, 'A2A-Extensions': ADK_EXT})):
        out += [
            Recording(variant, 'tools', 'What is the weather? tools', headers=headers),
            Recording(variant, 'long-running', 'Spend 5 euros, long-running please',
                      headers=headers, followup=adk_followup),
            Recording(variant, 'state', 'Remember my city: state', headers=headers),
        ]
    return out


FRAMEWORKS: dict[str, Framework] = {
    'adk': Framework('adk', 'adk', {'': []}, {'': _adk_recordings()}),
    'fasta2a': Framework('fasta2a', 'fasta2a', {'': []}, {'': [
        Recording('jsonrpc03', 'tools', 'What is the weather? tools'),
        Recording('jsonrpc10', 'tools', 'What is the weather? tools', dialect='10',
                  headers={'A2A-Version': '1.0'}),
    ]}),
    'strands': Framework('strands', 'strands', {'legacy': [], 'compliant': ['--compliant']}, {
        mode: [Recording(mode, 'text', 'Say something: text'),
               Recording(mode, 'interrupt', 'Delete the file: interrupt',
                         followup=strands_followup)]
        for mode in ('legacy', 'compliant')}),
    'langgraph': Framework('langgraph', 'langgraph', {'': []}, {'': [
        Recording('', 'tools', 'What is the weather? tools'),
        Recording('', 'interrupt', 'Book it: interrupt', followup=langgraph_followup),
        Recording('', 'a2ui', 'Show the booking form: a2ui',
                  headers={'X-A2A-Extensions': A2UI_V09_EXT, 'A2A-Extensions': A2UI_V09_EXT}),
    ]}, ready_timeout=90.0, a2a_path=langgraph_path),
    'agentstack': Framework('agentstack', 'agentstack', {'': []}, {'': [
        Recording('', 'trajectory', 'Research this: trajectory'),
        Recording('', 'citation', 'Cite it: citation'),
        Recording('', 'approval', 'Run the tool: approval', followup=agentstack_followup),
    ]}, a2a_path=lambda port: '/jsonrpc/'),
    'crewai': Framework('crewai', 'crewai', {'': []}, {'': [
        Recording('', 'answer', 'What is the weather in Paris? answer'),
        Recording('', 'data', 'The weather in Paris as data', part_metadata=CREWAI_SCHEMA),
        Recording('', 'data-ignored', 'The weather in Paris as data (data-ignored)',
                  part_metadata=CREWAI_SCHEMA),
    ]}),
    # A2AExecutor(agent, stream=True) by default, stream=False with --no-stream. a2a-sdk 1.x with
    # the v0.3 compatibility layer, so both dialects are recorded for the streaming mode.
    'maf': Framework('maf', 'maf', {'stream': [], 'nostream': ['--no-stream']}, {
        'stream': [Recording('stream', 'text', 'Say hello: text'),
                   Recording('stream-jsonrpc10', 'text', 'Say hello: text', dialect='10',
                             headers={'A2A-Version': '1.0'})],
        'nostream': [Recording('nostream', 'text', 'Say hello: text')],
    }),
    # Node: @voltagent/a2a-server through @voltagent/server-hono (the path names the A2A
    # server and the agent, which share one id).
    'voltagent': Framework('voltagent', 'voltagent', {'': []}, {'': [
        Recording('', 'weather', 'What is the weather in Paris? weather'),
    ]}, a2a_path=lambda port: '/a2a/weather-agent', node=True),
    # Node: Mastra 0.24's own server (@mastra/deployer createNodeServer). Its message/stream
    # body is not SSE: JSON objects each followed by \x1e (see sse_events).
    'mastra': Framework('mastra', 'mastra', {'': []}, {'': [
        Recording('', 'weather', 'What is the weather in Paris? weather'),
    ]}, a2a_path=lambda port: '/a2a/weather-agent', node=True),
    # PraisonAI's own A2A router (not a2a-sdk): JSON-RPC at POST /a2a.
    'praisonai': Framework('praisonai', 'praisonai', {'': []}, {'': [
        Recording('', 'weather', 'What is the weather in Paris? weather'),
    ]}, a2a_path=lambda port: '/a2a'),
    # kagent-adk's KAgentApp (kagent's executor and converters, a2a-sdk 0.3): `default` is
    # stream=False (whole ADK events), `stream` is stream=True (StreamingMode.SSE partials).
    'kagent': Framework('kagent', 'kagent', {'default': [], 'stream': ['--stream']}, {
        mode: [Recording(mode, 'weather', 'What is the weather in Paris? weather')]
        for mode in ('default', 'stream')}),
    # BeeAI Framework's A2AServer (a2a-sdk 0.3): `default` leaves send_trajectory unset (only
    # the final answer), `trajectory` sets it (every new memory message as a working status).
    'beeai': Framework('beeai', 'beeai', {'default': [], 'trajectory': ['--trajectory']}, {
        mode: [Recording(mode, 'weather', 'What is the weather in Paris? weather')]
        for mode in ('default', 'trajectory')}),
    # Agno AgentOS's A2A interface (its own FastAPI router, a2a-sdk 0.3 types).
    'agno': Framework('agno', 'agno', {'': []}, {'': [
        Recording('', 'weather', 'What is the weather in Paris? weather'),
    ]}, a2a_path=lambda port: '/a2a/agents/scripted-agno-agent/v1/message:stream'),
}


# --------------------------------------------------------------------------------------------
# Server processes


class Server:
    def __init__(self, fw: Framework, mode: str, inherit_stderr: bool = False):
        self.fw, self.mode = fw, mode
        # The server's stderr: a temporary log (removed by discard_log) or ours (--serve).
        self.log = None if inherit_stderr else tempfile.NamedTemporaryFile(
            prefix=f'fw-{fw.name}-', suffix='.log', delete=False)
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> int:
        cmd = self.fw.command(self.mode)
        if self.fw.node:
            modules = os.path.join(HERE, self.fw.name, 'node_modules')
            if not os.path.isdir(modules):
                raise RuntimeError(f'{modules} missing: run tests/frameworks/setup.sh')
        elif not os.path.exists(cmd[0]):
            raise RuntimeError(f'{cmd[0]} missing: run tests/frameworks/setup.sh')
        env = dict(os.environ, PYTHONUNBUFFERED='1', PYTHONWARNINGS='ignore')
        # A session of its own, so stop() can signal the server and any child it started.
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log or None, env=env,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.fw.ready_timeout
        buf = b''
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
                for line in buf.split(b'\n')[:-1]:
                    if line.startswith(b'READY '):
                        self.port = int(line.split()[1])
                        return self.port
            elif self.proc.poll() is not None:
                break
        self.stop()
        where = f'; log: {self.log.name}\n' + self.tail() if self.log else ''
        raise RuntimeError(f'{self.label()} did not print READY within '
                           f'{self.fw.ready_timeout:.0f} s' + where)

    def label(self) -> str:
        return self.fw.name + (f' ({self.mode})' if self.mode else '')

    def discard_log(self) -> None:
        if self.log is not None:
            self.log.close()
            os.unlink(self.log.name)
            self.log = None

    def tail(self) -> str:
        if self.log is None:
            return ''
        try:
            with open(self.log.name, 'rb') as f:
                return f.read()[-3000:].decode(errors='replace')
        except OSError:
            return ''

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            return self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return self.proc.wait(STOP_TIMEOUT)


# --------------------------------------------------------------------------------------------
# Recording


def file_stem(fw: str, rec: Recording, followup: bool) -> str:
    parts = [fw] + ([rec.variant] if rec.variant else []) + [rec.scenario]
    return '-'.join(parts) + ('-followup' if followup else '')


def send(port: int, path: str, stem: str, request: dict, headers: dict[str, str]) -> list[Any]:
    body = json.dumps(request, indent=2, ensure_ascii=False).encode() + b'\n'
    with open(os.path.join(RECORDINGS, stem + '.request.json'), 'wb') as f:
        f.write(body)
    status, payload = post(port, path, body, headers)  # exactly the bytes saved above
    with open(os.path.join(RECORDINGS, stem + '.sse'), 'wb') as f:
        f.write(payload)
    if status != 200:
        raise RuntimeError(f'HTTP {status}: {payload[:300]!r}')
    events = sse_events(payload)
    if not events:
        raise RuntimeError(f'no SSE event in the response: {payload[:300]!r}')
    errors = [e['error'] for e in events if isinstance(e, dict) and 'error' in e]
    if errors:
        raise RuntimeError(f'JSON-RPC error: {json.dumps(errors[0])[:300]}')
    return events


def record_one(fw: Framework, rec: Recording, port: int, path: str) -> list[str]:
    stem = file_stem(fw.name, rec, False)
    build = rpc10 if rec.dialect == '10' else rpc03
    message = text_message(f'msg-{stem}', rec.text, rec.part_metadata)
    events = send(port, path, stem, build(stem, message), rec.headers)
    written = [stem]
    if rec.followup is not None:
        task_id, context_id = task_and_context(events)
        extra = rec.followup(events)
        follow_stem = file_stem(fw.name, rec, True)
        message = {'kind': 'message', 'role': 'user', 'messageId': f'msg-{follow_stem}',
                   'taskId': task_id, 'contextId': context_id, **extra}
        send(port, path, follow_stem, build(follow_stem, message), rec.headers)
        written.append(follow_stem)
    return written


def record(names: list[str]) -> int:
    os.makedirs(RECORDINGS, exist_ok=True)
    failures = 0
    for name in names:
        fw = FRAMEWORKS[name]
        for mode in fw.modes:
            server = Server(fw, mode)
            try:
                port = server.start()
                path = fw.a2a_path(port)
            except Exception as exc:  # noqa: BLE001 - reported and counted
                print(f'FAIL {server.label()}: {exc}', file=sys.stderr)
                failures += 1
                server.stop()
                continue
            print(f'{server.label()}: port {port}, A2A at {path}')
            failed_before = failures
            status = None
            try:
                for rec in fw.recordings[mode]:
                    try:
                        for stem in record_one(fw, rec, port, path):
                            print(f'  recorded {stem}.sse')
                    except Exception as exc:  # noqa: BLE001
                        print(f'  FAIL {file_stem(fw.name, rec, False)}: {exc}', file=sys.stderr)
                        failures += 1
            finally:
                status = server.stop()
                if status not in (0, None):
                    # Not a recording failure, but worth seeing: the servers should exit 0.
                    print(f'  note: {server.label()} exited with status {status} after SIGTERM',
                          file=sys.stderr)
            if failures == failed_before and status in (0, None):
                server.discard_log()
            else:
                print(f'  server log: {server.log.name}', file=sys.stderr)
    print(f'{"ok" if failures == 0 else f"{failures} failure(s)"}')
    return 1 if failures else 0


def serve_only(name: str, mode: str, max_seconds: float) -> int:
    fw = FRAMEWORKS[name]
    if mode not in fw.modes:
        print(f'unknown mode {mode!r} for {name}; modes: {sorted(fw.modes)}', file=sys.stderr)
        return 2
    server = Server(fw, mode, inherit_stderr=True)
    stopping = []

    def stop(*_: Any) -> None:
        stopping.append(1)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        port = server.start()
        print(f'A2A path: {fw.a2a_path(port)}', file=sys.stderr)
    except Exception as exc:  # noqa: BLE001
        print(f'FAIL {server.label()}: {exc}', file=sys.stderr)
        server.stop()
        return 1
    sys.stdout.write(f'READY {port}\n')
    sys.stdout.flush()
    deadline = time.monotonic() + max_seconds
    while not stopping and server.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    died = server.proc.poll() is not None
    server.stop()
    return 1 if died and not stopping else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--only', nargs='+', choices=sorted(FRAMEWORKS), help='frameworks to record')
    ap.add_argument('--serve', choices=sorted(FRAMEWORKS), help='only start this server')
    ap.add_argument('--mode', default=None, help='server mode for --serve (strands: legacy|compliant, maf: stream|nostream)')
    ap.add_argument('--max-seconds', type=float, default=3600.0,
                    help='--serve stops the server after this long (default 3600)')
    args = ap.parse_args()
    if args.serve:
        fw = FRAMEWORKS[args.serve]
        mode = args.mode if args.mode is not None else next(iter(fw.modes))
        return serve_only(args.serve, mode, args.max_seconds)
    return record(args.only or list(FRAMEWORKS))


if __name__ == '__main__':
    sys.exit(main())
