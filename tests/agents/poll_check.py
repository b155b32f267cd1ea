#!/usr/bin/env python3
"""One send without blocking, then task reads until the task ends: what a polling client sees.

  poll_check.py --dialect j10|j03|r10|r03 --base URL [--text progress] [--interval 0.25]
  poll_check.py --dialect g10|g03 --base HOST:PORT ...      (gRPC: run it with a venv's python)
      Sends TEXT without blocking (0.3 `configuration.blocking: false`, 1.0
      `configuration.returnImmediately: true`), reads the task every INTERVAL seconds until it
      is in a final or waiting state, and checks the `progress` scenario: the send answered at
      once with the Task, a read in the middle showed a working "Step N of 3" status message,
      every step message was seen (status.message or history, by messageId), and the task ended
      completed with artifact answer-1 "All three steps done.". Prints
      "task=<id> gets=<n> send_ms=<ms>" and exits 0, else prints the reasons and exits 1.
  ... --blocking       the default send instead: the answer must be the completed task.
  ... --dump           print the send answer and every read, normalised, one JSON line each.

Dialects as in sse_check.py: j = JSON-RPC at BASE, r = HTTP+JSON under BASE (…/rest), g = gRPC;
10 = A2A 1.0 (the header `A2A-Version: 1.0`, gRPC metadata `a2a-version: 1.0`), 03 = A2A 0.3.
HTTP only needs the standard library; gRPC needs grpc and a2a-sdk 1.3.0's stubs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sse_check import norm_state  # noqa: E402

FINAL = {'completed', 'failed', 'rejected', 'canceled', 'input-required', 'auth-required'}


def norm_message(msg: dict | None) -> dict | None:
    if not msg:
        return None
    parts = msg.get('parts') if 'parts' in msg else msg.get('content') or []
    role = (msg.get('role') or '').lower().removeprefix('role_')
    return {'messageId': msg.get('messageId'), 'role': role,
            'text': ''.join(p.get('text', '') for p in parts)}


def norm_task(task: dict) -> dict:
    status = task.get('status') or {}
    return {
        'id': task.get('id'),
        'state': norm_state(status.get('state')),
        'statusMessage': norm_message(status.get('message')),
        'history': [norm_message(m) for m in task.get('history') or []],
        'artifacts': [{'artifactId': a.get('artifactId'), 'parts': len(a.get('parts') or []),
                       'text': ''.join(p.get('text', '') for p in a.get('parts') or [])}
                      for a in task.get('artifacts') or []],
    }


def norm_answer(result: dict) -> dict:
    """A send's answer: 0.3 JSON-RPC is the Task or Message itself (`kind`), the rest wrap it."""
    if result.get('kind') == 'task' or ('task' not in result and 'status' in result):
        return {'task': norm_task(result)}
    if 'task' in result:
        return {'task': norm_task(result['task'])}
    message = result.get('message') or result.get('msg') or result
    return {'message': norm_message(message)}


class Http:
    def __init__(self, dialect: str, base: str) -> None:
        self.dialect, self.base = dialect, base.rstrip('/')
        self.headers = {'Content-Type': 'application/json'}
        if dialect.endswith('10'):
            self.headers['A2A-Version'] = '1.0'

    def _call(self, method: str, path: str, body: Any | None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=self.headers)
        with urllib.request.urlopen(request, timeout=15) as answer:
            doc = json.loads(answer.read())
        if isinstance(doc, dict) and 'error' in doc:
            raise RuntimeError(f'{method} {path}: {doc["error"]}')
        return doc['result'] if self.dialect[0] == 'j' else doc

    def send(self, text: str, blocking: bool) -> dict:
        mid = f'poll-{uuid.uuid4()}'
        if self.dialect == 'j03':
            message = {'kind': 'message', 'role': 'user', 'messageId': mid,
                       'parts': [{'kind': 'text', 'text': text}]}
        elif self.dialect == 'r03':
            message = {'role': 'ROLE_USER', 'messageId': mid, 'content': [{'text': text}]}
        else:
            message = {'role': 'ROLE_USER', 'messageId': mid, 'parts': [{'text': text}]}
        params: dict[str, Any] = {'message': message}
        if not blocking:
            params['configuration'] = ({'returnImmediately': True} if self.dialect.endswith('10')
                                       else {'blocking': False})
        if self.dialect[0] == 'j':
            method = 'SendMessage' if self.dialect == 'j10' else 'message/send'
            return self._call('POST', '/', {'jsonrpc': '2.0', 'id': mid, 'method': method, 'params': params})
        return self._call('POST', '/message:send' if self.dialect == 'r10' else '/v1/message:send', params)

    def get(self, task_id: str) -> dict:
        if self.dialect[0] == 'j':
            method = 'GetTask' if self.dialect == 'j10' else 'tasks/get'
            return self._call('POST', '/', {'jsonrpc': '2.0', 'id': 'get', 'method': method,
                                            'params': {'id': task_id}})
        return self._call('GET', ('/tasks/' if self.dialect == 'r10' else '/v1/tasks/') + task_id, None)


class Grpc:
    def __init__(self, dialect: str, address: str) -> None:
        import grpc
        from google.protobuf.json_format import MessageToDict
        self.to_dict = MessageToDict
        self.channel = grpc.insecure_channel(address)
        self.v10 = dialect == 'g10'
        if self.v10:
            from a2a.types import a2a_pb2 as pb, a2a_pb2_grpc as pb_grpc
            self.metadata = [('a2a-version', '1.0')]
        else:
            from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb, a2a_v0_3_pb2_grpc as pb_grpc
            self.metadata = []
        self.pb, self.stub = pb, pb_grpc.A2AServiceStub(self.channel)

    def send(self, text: str, blocking: bool) -> dict:
        pb = self.pb
        mid = f'poll-{uuid.uuid4()}'
        if self.v10:
            request = pb.SendMessageRequest(message=pb.Message(
                message_id=mid, role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)]))
            if not blocking:
                request.configuration.return_immediately = True
        else:
            request = pb.SendMessageRequest(request=pb.Message(
                message_id=mid, role=pb.Role.ROLE_USER, content=[pb.Part(text=text)]))
            # 0.3's `blocking` is a plain proto3 bool: absent reads as false. A blocking send
            # sets it; a non-blocking one sends the configuration with it false.
            request.configuration.blocking = blocking
        answer = self.stub.SendMessage(request, metadata=self.metadata, timeout=15)
        return self.to_dict(answer)

    def get(self, task_id: str) -> dict:
        request = (self.pb.GetTaskRequest(id=task_id) if self.v10
                   else self.pb.GetTaskRequest(name=f'tasks/{task_id}'))
        return self.to_dict(self.stub.GetTask(request, metadata=self.metadata, timeout=15))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dialect', required=True, choices=['j10', 'j03', 'r10', 'r03', 'g10', 'g03'])
    ap.add_argument('--base', required=True)
    ap.add_argument('--text', default='progress')
    ap.add_argument('--interval', type=float, default=0.25)
    ap.add_argument('--timeout', type=float, default=20.0, help='give up reading after this many seconds')
    ap.add_argument('--blocking', action='store_true')
    ap.add_argument('--dump', action='store_true')
    a = ap.parse_args()
    agent = Grpc(a.dialect, a.base) if a.dialect[0] == 'g' else Http(a.dialect, a.base)
    errors: list[str] = []

    started = time.monotonic()
    answer = norm_answer(agent.send(a.text, a.blocking))
    send_ms = int((time.monotonic() - started) * 1000)
    if a.dump:
        print(json.dumps({'send': answer, 'ms': send_ms}))
    task = answer.get('task')
    if task is None:
        print(f'the send answered with no task: {answer}', file=sys.stderr)
        return 1

    reads = [task]
    if not a.blocking:
        if send_ms > 1000:
            errors.append(f'a non-blocking send took {send_ms} ms')
        if task['state'] in FINAL:
            errors.append(f"a non-blocking send answered in final state {task['state']}")
        deadline = started + a.timeout
        while reads[-1]['state'] not in FINAL and time.monotonic() < deadline:
            time.sleep(a.interval)
            reads.append(norm_task(agent.get(task['id'])))
            if a.dump:
                print(json.dumps({'get': reads[-1], 't': round(time.monotonic() - started, 3)}))
    last = reads[-1]

    if re.match(r'progress(:|$)', a.text):
        if last['state'] != 'completed':
            errors.append(f"the task ended in state {last['state']}, expected completed")
        answers = [x['text'] for x in last['artifacts'] if x['artifactId'] == 'answer-1']
        if answers != ['All three steps done.']:
            errors.append(f'answer-1 is {answers!r}')
        if not a.blocking and not any(
                r['state'] == 'working' and r['statusMessage']
                and re.fullmatch(r'Step [123] of 3', r['statusMessage']['text']) for r in reads):
            errors.append('no read showed a working "Step N of 3" status message')
        seen: dict[str, str] = {}
        for r in reads:
            for m in r['history'] + [r['statusMessage']]:
                if m and m['role'] == 'agent':
                    seen.setdefault(m['messageId'], m['text'])
        if list(seen.values()) != ['Step 1 of 3', 'Step 2 of 3', 'Step 3 of 3']:
            errors.append(f'agent messages seen: {list(seen.values())!r}')
    for error in errors:
        print(error, file=sys.stderr)
    print(f"task={task['id']} gets={len(reads) - 1} send_ms={send_ms}")
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
