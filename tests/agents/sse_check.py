#!/usr/bin/env python3
"""Checks one recorded A2A SSE body against what its scenario must produce (stdlib only).

  sse_check.py --dialect j10|j03|r10|r03 --scenario NAME [--follow-up] FILE
      exit 0 and print "task=<id> context=<id>" when the stream is right, else exit 1
      and print the reasons on stderr.
  sse_check.py --dialect D --dump FILE
      print the normalised events, one JSON object a line.

Dialects: j10 = JSON-RPC 1.0, j03 = JSON-RPC 0.3, r10 = HTTP+JSON 1.0, r03 = HTTP+JSON 0.3.
The SSE parser follows the WHATWG rules that matter here: CRLF/CR/LF line ends, multi-line
`data:` joined with "\\n", comments and unknown fields ignored, a last event without its blank line.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

WRAPPERS = {'task': 'task', 'message': 'message', 'statusUpdate': 'status', 'artifactUpdate': 'artifact'}
KINDS_03 = {'task': 'task', 'message': 'message', 'status-update': 'status', 'artifact-update': 'artifact'}


def parse_sse(raw: bytes) -> list[dict]:
    text = raw.decode('utf-8')
    if text.startswith('\ufeff'):
        text = text[1:]
    events, data, name = [], [], ''
    for line in re.split(r'\r\n|\r|\n', text):
        if line == '':
            if data:
                events.append({'event': name or 'message', 'data': '\n'.join(data)})
            data, name = [], ''
            continue
        if line.startswith(':'):
            continue
        field, _, value = line.partition(':')
        if value.startswith(' '):
            value = value[1:]
        if field == 'data':
            data.append(value)
        elif field == 'event':
            name = value
    if data:
        events.append({'event': name or 'message', 'data': '\n'.join(data)})
    return events


def norm_state(state: str | None) -> str | None:
    if not state:
        return None
    s = state.lower()
    if s.startswith('task_state_'):
        s = s[len('task_state_'):].replace('_', '-')
    return 'canceled' if s == 'cancelled' else s


def norm_part(part: dict, dialect: str) -> dict:
    out: dict[str, Any] = {}
    if 'text' in part:
        out['text'] = part['text']
    elif 'data' in part:
        data = part['data']
        if dialect == 'r03' and isinstance(data, dict) and set(data) == {'data'}:
            data = data['data']  # 0.3 ProtoJSON DataPart wrapper
        out['data'] = data
    elif 'url' in part:
        out['url'] = part['url']
    elif 'file' in part:
        f = part['file']
        out['url'] = f.get('uri') or f.get('fileWithUri')
        if 'bytes' in f or 'fileWithBytes' in f:
            out['bytes'] = f.get('bytes') or f.get('fileWithBytes')
    if part.get('metadata'):
        out['metadata'] = part['metadata']
    return out


def norm_message(msg: dict | None, dialect: str) -> dict | None:
    if not msg:
        return None
    parts = msg.get('parts') if 'parts' in msg else msg.get('content', [])
    return {'parts': [norm_part(p, dialect) for p in parts or []], 'metadata': msg.get('metadata') or {},
            'messageId': msg.get('messageId')}


def normalise(doc: dict, dialect: str) -> dict:
    if 'error' in doc:
        return {'kind': 'error', 'error': doc['error']}
    if dialect in ('j10', 'j03'):
        if 'result' not in doc:
            raise ValueError(f'JSON-RPC frame without result: {doc}')
        body = doc['result']
    else:
        body = doc
    if dialect == 'j03':
        kind = KINDS_03.get(body.get('kind'))
        obj = body
    else:
        keys = [k for k in WRAPPERS if k in body]
        if len(keys) != 1:
            raise ValueError(f'expected exactly one of {list(WRAPPERS)}: {body}')
        kind, obj = WRAPPERS[keys[0]], body[keys[0]]
    if kind is None:
        raise ValueError(f'unknown event: {body}')
    ev: dict[str, Any] = {'kind': kind}
    if kind == 'task':
        ev.update(taskId=obj.get('id'), contextId=obj.get('contextId'),
                  state=norm_state(obj.get('status', {}).get('state')))
    elif kind == 'message':
        ev.update(contextId=obj.get('contextId'), message=norm_message(obj, dialect))
    elif kind == 'status':
        status = obj.get('status', {})
        ev.update(taskId=obj.get('taskId'), contextId=obj.get('contextId'), state=norm_state(status.get('state')),
                  message=norm_message(status.get('message'), dialect))
        if 'final' in obj:
            ev['final'] = obj['final']
    else:
        art = obj.get('artifact', {})
        ev.update(taskId=obj.get('taskId'), contextId=obj.get('contextId'), artifactId=art.get('artifactId'),
                  parts=[norm_part(p, dialect) for p in art.get('parts') or []],
                  metadata=art.get('metadata') or {}, append=bool(obj.get('append')),
                  lastChunk=bool(obj.get('lastChunk')))
    return ev


def texts(parts: list[dict]) -> str:
    return ''.join(p.get('text', '') for p in parts)


class Checker:
    def __init__(self, events: list[dict]) -> None:
        self.events = events
        self.errors: list[str] = []

    def expect(self, cond: bool, what: str) -> None:
        if not cond:
            self.errors.append(what)

    def artifact_events(self, artifact_id: str) -> list[dict]:
        return [e for e in self.events if e['kind'] == 'artifact' and e['artifactId'] == artifact_id]

    def artifact_text(self, artifact_id: str) -> str:
        return ''.join(texts(e['parts']) for e in self.artifact_events(artifact_id))

    def task_stream(self, final_state: str, first_may_be_status: bool = False) -> dict | None:
        ev = self.events
        self.expect(bool(ev), 'no events')
        if not ev:
            return None
        first_ok = ev[0]['kind'] == 'task' or (first_may_be_status and ev[0]['kind'] == 'status')
        self.expect(first_ok, f"first event is {ev[0]['kind']}, expected task")
        last = ev[-1]
        self.expect(last['kind'] == 'status' and last.get('state') == final_state,
                    f"last event is {last['kind']}/{last.get('state')}, expected status/{final_state}")
        states = [e.get('state') for e in ev if e['kind'] == 'status']
        self.expect(states.count(final_state) == 1, f'state {final_state} seen {states.count(final_state)} times')
        return last

    def status_text(self, event: dict | None, expected: str) -> None:
        msg = (event or {}).get('message')
        got = texts(msg['parts']) if msg else None
        self.expect(got == expected, f'status message {got!r}, expected {expected!r}')


def check(events: list[dict], scenario: str, follow_up: bool, dialect: str) -> list[str]:
    c = Checker(events)
    if any(e['kind'] == 'error' for e in events):
        return [f"error event: {next(e for e in events if e['kind'] == 'error')['error']}"]
    if scenario == 'message-only':
        c.expect(len(events) == 1 and events[0]['kind'] == 'message',
                 f"expected exactly one message event, got {[e['kind'] for e in events]}")
        if events and events[0]['kind'] == 'message':
            c.expect(texts(events[0]['message']['parts']) == 'Direct reply, no task.', 'message text')
    elif scenario == 'chunks':
        last = c.task_stream('completed')
        chunks = c.artifact_events('answer-1')
        c.expect(len(chunks) >= 5, f'{len(chunks)} chunks of answer-1, expected >= 5')
        c.expect(c.artifact_text('answer-1') == 'Hello from the streaming test agent.',
                 f"answer-1 text {c.artifact_text('answer-1')!r}")
        if chunks:
            c.expect(not chunks[0]['append'] and all(e['append'] for e in chunks[1:]), 'append flags')
            c.expect(chunks[-1]['lastChunk'] and not any(e['lastChunk'] for e in chunks[:-1]), 'lastChunk flags')
        c.status_text(last, 'Done.')
        working = [e for e in events if e['kind'] == 'status' and e['state'] == 'working']
        c.expect(bool(working), 'no working status')
        if working:
            c.status_text(working[0], 'Thinking...')
    elif scenario == 'input-required' and not follow_up:
        last = c.task_stream('input-required')
        c.expect(c.artifact_text('answer-1') == 'I can check the weather.', 'answer-1 text')
        c.status_text(last, 'Which city?')
    elif scenario == 'input-required':
        c.task_stream('completed', first_may_be_status=True)
        c.expect(c.artifact_text('answer-2') == 'Weather for Paris: sunny.',
                 f"answer-2 text {c.artifact_text('answer-2')!r}")
    elif scenario == 'fail':
        last = c.task_stream('failed')
        c.expect(c.artifact_text('answer-1') == 'Starting the job...', 'answer-1 text')
        c.status_text(last, 'Boom.')
    elif scenario == 'commands':
        c.task_stream('completed')
        chunks = c.artifact_events('a1')
        c.expect(c.artifact_text('a1') == 'Sunny today, no rain.', f"a1 text {c.artifact_text('a1')!r}")
        c.expect(len(chunks) == 2, f'{len(chunks)} chunks of a1, expected 2')
        if chunks:
            commands = chunks[-1]['metadata'].get('commands')
            c.expect(chunks[-1]['lastChunk'], 'last a1 chunk without lastChunk')
            c.expect(isinstance(commands, list) and commands and commands[0].get('name') == 'VOLUME_SET'
                     and commands[0].get('commandRequestId') == 'cmd-1',
                     f'commands metadata on the last a1 chunk: {commands!r}')
        echo = c.artifact_events('echo-metadata')
        c.expect(len(echo) == 1, f'{len(echo)} echo-metadata artifacts, expected 1')
        if echo:
            data = echo[0]['parts'][0].get('data', {}) if echo[0]['parts'] else {}
            md = data.get('metadata', {}) if isinstance(data, dict) else {}
            c.expect(md.get('user') == {'userId': 'u1'} and md.get('chatId') == 'chat-1'
                     and md.get('location', {}).get('city') == 'Hangzhou',
                     f'echoed metadata {md!r}')
    elif scenario == 'progress':
        c.task_stream('completed')
        steps = [e for e in events if e['kind'] == 'status' and e['state'] == 'working']
        c.expect([texts(e['message']['parts']) if e['message'] else None for e in steps]
                 == ['Step 1 of 3', 'Step 2 of 3', 'Step 3 of 3'], 'working status messages')
        ids = {e['message']['messageId'] for e in steps if e['message']}
        c.expect(len(ids) == len(steps), f'{len(ids)} message ids for {len(steps)} status messages')
        c.expect(c.artifact_text('answer-1') == 'All three steps done.',
                 f"answer-1 text {c.artifact_text('answer-1')!r}")
    elif scenario == 'cancel-me':
        c.task_stream('canceled')
        c.expect(len(c.artifact_events('ticks')) >= 1, 'no ticks before the cancel')
    else:
        c.errors.append(f'no expectations for scenario {scenario!r}')
    return c.errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dialect', required=True, choices=['j10', 'j03', 'r10', 'r03'])
    ap.add_argument('--scenario')
    ap.add_argument('--follow-up', action='store_true')
    ap.add_argument('--dump', action='store_true')
    ap.add_argument('file')
    a = ap.parse_args()
    with open(a.file, 'rb') as fh:
        raw = fh.read()
    try:
        events = [normalise(json.loads(e['data']), a.dialect) for e in parse_sse(raw)]
    except (ValueError, UnicodeDecodeError) as exc:  # json.JSONDecodeError is a ValueError
        head = raw[:300].decode('utf-8', 'replace')
        print(f'not a well-formed A2A SSE stream ({exc}); body starts: {head!r}', file=sys.stderr)
        return 1
    if a.dump:
        for e in events:
            print(json.dumps(e, ensure_ascii=False))
        return 0
    if not a.scenario:
        ap.error('--scenario is required unless --dump')
    errors = check(events, a.scenario, a.follow_up, a.dialect)
    if errors:
        for err in errors:
            print(err, file=sys.stderr)
        return 1
    first = events[0] if events else {}
    print(f"task={first.get('taskId') or ''} context={first.get('contextId') or ''}")
    return 0


if __name__ == '__main__':
    sys.exit(main())
