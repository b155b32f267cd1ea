"""SDK-neutral scenario engine shared by the two Python test agents.

Reads ``scenarios.json`` (the one scenario list that every test agent plays, the
JavaScript agent included), picks a scenario from the user's text, and plays its
steps through an ``Emitter`` that each agent implements on top of its own SDK.
It also holds the small process helpers both Python agents need: argument
parsing and a uvicorn runner that supports ``--port 0``, prints ``READY <port>``
and exits with status 0 on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

SCENARIOS_PATH = Path(os.environ.get('SCENARIOS_FILE') or Path(__file__).resolve().with_name('scenarios.json'))

TERMINAL_STATES = frozenset({'completed', 'failed', 'rejected', 'canceled'})
INTERRUPTED_STATES = frozenset({'input-required', 'auth-required'})
FINAL_STATES = TERMINAL_STATES | INTERRUPTED_STATES

# Agent card extension URIs that every test agent declares.
EXTENSION_URIS = (
    ('https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol',
     'Alibaba Model Studio multimodal interaction: request metadata, commands on the last artifact'),
    ('https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1',
     'Agent Stack citations in message metadata'),
    ('https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1',
     'Agent Stack trajectory steps in message metadata'),
)

_TOKEN_TRIM = '.,;!?"\'()[]{}<>`'


def delay_seconds() -> float:
    """Pause before each step: DELAY_MS from the environment, default 20 ms."""
    raw = os.environ.get('DELAY_MS', '').strip()
    try:
        return max(0.0, float(raw)) / 1000.0 if raw else 0.02
    except ValueError:
        return 0.02


def streaming() -> bool:
    """The card's capabilities.streaming: STREAMING=0 (or false/no/off) says false; the default true.

    The SDKs refuse message/stream and SendStreamingMessage (and the REST and gRPC streaming
    calls) when the card says false, so such an agent can only be sent to and polled.
    """
    return os.environ.get('STREAMING', '').strip().lower() not in ('0', 'false', 'no', 'off')


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Emitter(Protocol):
    """What an agent must provide to play a scenario with its SDK.

    Parts, messages and artifacts arrive in the neutral JSON form of
    scenarios.json; states are the 0.3 names ('working', 'input-required', ...).
    """

    async def status(self, state: str, message: dict | None, metadata: dict | None) -> None: ...

    async def artifact(self, artifact: dict, append: bool | None, last_chunk: bool | None) -> None: ...

    async def message(self, message: dict) -> None: ...

    def canceled(self) -> bool: ...


@dataclass
class Plan:
    name: str
    steps: list[dict]
    arg: str | None

    @property
    def message_only(self) -> bool:
        return bool(self.steps) and step_kind(self.steps[0]) == 'message'


class Catalog:
    def __init__(self, path: Path = SCENARIOS_PATH) -> None:
        doc = json.loads(path.read_text(encoding='utf-8'))
        self.default: str = doc['default']
        self.scenarios: dict[str, dict] = {s['name']: s for s in doc['scenarios']}
        if self.default not in self.scenarios:
            raise ValueError(f'default scenario {self.default!r} is not defined')

    def pick(self, text: str) -> tuple[dict, str | None]:
        """The first token of ``text`` that names a scenario wins; ``name:arg`` carries an argument."""
        for raw in text.split():
            token = raw.strip(_TOKEN_TRIM).lower()
            name, colon, arg = token.partition(':')
            if name in self.scenarios:
                return self.scenarios[name], (arg if colon else None)
        return self.scenarios[self.default], None

    def plan(self, user_text: str, user_metadata: dict | None, follow_up_of: str | None = None) -> Plan:
        """Steps for this turn. ``follow_up_of`` names the scenario whose task is waiting for input."""
        if follow_up_of and 'followUp' in self.scenarios.get(follow_up_of, {}):
            steps = _substitute(self.scenarios[follow_up_of]['followUp'], '{input}', user_text.strip())
            name, arg = follow_up_of + '/followUp', None
        else:
            scenario, arg = self.pick(user_text)
            steps, name = copy.deepcopy(scenario['steps']), scenario['name']
        if user_metadata and steps and step_kind(steps[-1]) == 'status' and steps[-1]['status'] in FINAL_STATES:
            steps.insert(len(steps) - 1, {
                'artifact': {'artifactId': 'echo-metadata', 'name': 'echo-metadata',
                             'parts': [{'data': {'metadata': user_metadata}}]},
                'lastChunk': True,
            })
        return Plan(name=name, steps=steps, arg=arg)


STEP_KINDS = ('status', 'artifact', 'message', 'pause', 'drip', 'ticks', 'big')


def step_kind(step: dict) -> str:
    """A step's kind is the first of STEP_KINDS among its keys (a status step may carry a 'message')."""
    for kind in STEP_KINDS:
        if kind in step:
            return kind
    raise ValueError(f'unknown step {step!r}')


def _substitute(value: Any, needle: str, replacement: str) -> Any:
    if isinstance(value, str):
        return value.replace(needle, replacement)
    if isinstance(value, list):
        return [_substitute(v, needle, replacement) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, needle, replacement) for k, v in value.items()}
    return value


def _int_arg(arg: str | None, default: int) -> int:
    try:
        return int(arg) if arg else default
    except ValueError:
        return default


def _float_arg(arg: str | None, default: float) -> float:
    try:
        return float(arg) if arg else default
    except ValueError:
        return default


def status_message(step: dict) -> dict | None:
    if 'message' in step:
        return step['message']
    if 'text' in step:
        return {'parts': [{'text': step['text']}]}
    return None


async def play(plan: Plan, em: Emitter, delay: float | None = None) -> None:
    """Play every step of ``plan`` through ``em``; stops early once the task is canceled."""
    delay = delay_seconds() if delay is None else delay
    for step in plan.steps:
        if em.canceled():
            return
        if delay:
            await asyncio.sleep(delay)
        kind = step_kind(step)
        if kind == 'status':
            await em.status(step['status'], status_message(step), step.get('metadata'))
        elif kind == 'artifact':
            await em.artifact(step['artifact'], step.get('append'), step.get('lastChunk'))
        elif kind == 'message':
            await em.message(step['message'])
        elif kind == 'pause':
            spec = step['pause']
            await asyncio.sleep(_float_arg(plan.arg, float(spec['defaultSeconds'])))
        elif kind == 'drip':
            spec = step['drip']
            for i in range(spec['count']):
                if i:
                    await asyncio.sleep(spec['intervalMs'] / 1000.0)
                if em.canceled():
                    return
                await em.artifact(
                    {'artifactId': spec['artifactId'], 'name': spec['name'],
                     'parts': [{'text': str(now_ms())}]},
                    i > 0, i == spec['count'] - 1)
        elif kind == 'ticks':
            spec = step['ticks']
            deadline = time.monotonic() + spec['maxSeconds']
            i = 0
            while time.monotonic() < deadline:
                if em.canceled():
                    return
                await em.artifact(
                    {'artifactId': spec['artifactId'], 'name': spec['name'],
                     'parts': [{'text': f'tick {i} '}]},
                    i > 0, False)
                i += 1
                await asyncio.sleep(spec['intervalMs'] / 1000.0)
            if em.canceled():
                return
            await em.artifact({'artifactId': spec['artifactId'], 'name': spec['name'],
                               'parts': [{'text': 'end'}]}, i > 0, True)
        elif kind == 'big':
            spec = step['big']
            size = max(0, _int_arg(plan.arg, spec['defaultBytes']))
            await em.artifact({'artifactId': spec['artifactId'], 'name': spec['name'],
                               'parts': [{'text': 'x' * size}]}, False, True)
        else:  # pragma: no cover - step_kind() already rejected it
            raise ValueError(f'unknown step in scenario {plan.name}: {step!r}')


# ---------------------------------------------------------------- process --

# The process helpers are the framework servers' (one runner for every test
# server): argument parsing, and uvicorn on a socket bound first so that port 0
# is resolved before the card is built, printing ``READY <port>`` and exiting 0
# on SIGTERM/SIGINT.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'frameworks'))
import _serve  # noqa: E402


def parse_args(description: str) -> argparse.Namespace:
    return _serve.parse_args(description)


def serve(build_app: Callable[[str, int], Any], host: str, port: int) -> None:
    _serve.serve(build_app, host, port, lifespan='off')
