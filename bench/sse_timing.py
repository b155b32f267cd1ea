#!/usr/bin/env python3
"""Shows when each SSE event of one stream arrives, to check that a proxy does not buffer.

    python3 bench/sse_timing.py a2a  http://127.0.0.1:PORT/a2a/jsonrpc drip
    python3 bench/sse_timing.py agui http://127.0.0.1:PORT/agui drip

`a2a` POSTs a JSON-RPC 0.3 message/stream request, `agui` a RunAgentInput; the last argument is
the user's text (the tests/agents scenario word). For every event it prints the arrival time
(ms since the request was sent), its type, and, when the event carries a 13-digit epoch-ms
number as text (the `drip` scenario puts each chunk's send time there), how long after that send
time it arrived. A buffering proxy shows up as every event arriving together at the end.
Standard library only; the whole run is bounded by --timeout.
"""

import argparse
import http.client
import json
import re
import sys
import time
import uuid
from urllib.parse import urlsplit

STAMP = re.compile(r'"(?:text|delta)"\s*:\s*"(\d{13})"')
TYPE = re.compile(r'"(?:type|kind)"\s*:\s*"([A-Za-z_-]+)"')


def body_for(mode, text):
    msg_id = str(uuid.uuid4())
    if mode == "a2a":
        return {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/stream",
            "params": {
                "message": {"kind": "message", "messageId": msg_id, "role": "user",
                            "parts": [{"kind": "text", "text": text}]},
            },
        }
    return {
        "threadId": str(uuid.uuid4()), "runId": str(uuid.uuid4()),
        "messages": [{"id": msg_id, "role": "user", "content": text}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["a2a", "agui"])
    ap.add_argument("url")
    ap.add_argument("text", nargs="?", default="drip")
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()

    u = urlsplit(args.url)
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=args.timeout)
    payload = json.dumps(body_for(args.mode, args.text)).encode()
    deadline = time.monotonic() + args.timeout
    t0 = time.monotonic()
    conn.request("POST", path, body=payload,
                 headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
    resp = conn.getresponse()
    print(f"HTTP {resp.status} {resp.getheader('Content-Type')}"
          f" (headers after {1000 * (time.monotonic() - t0):.1f} ms)")
    buf = b""
    lags, arrivals = [], []
    n = 0
    while time.monotonic() < deadline:
        chunk = resp.read1(65536)
        if not chunk:
            break
        now = time.monotonic()
        wall_ms = time.time() * 1000
        buf += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in buf:
            frame, buf = buf.split(b"\n\n", 1)
            data = "\n".join(line[5:].lstrip() for line in frame.decode().split("\n")
                             if line.startswith("data:"))
            if not data:
                continue
            n += 1
            kinds = TYPE.findall(data)
            label = kinds[0] if kinds else "?"
            if label == "RAW" and len(kinds) > 1:
                label = f"RAW({kinds[1]})"
            elif args.mode == "a2a" and kinds:
                label = kinds[-1] if kinds[-1] != "text" else kinds[0]
            m = STAMP.search(data)
            extra = ""
            if m:
                lag = wall_ms - int(m.group(1))
                lags.append(lag)
                arrivals.append(now - t0)
                extra = f"  sent {m.group(1)}  arrived +{lag:.1f} ms after send"
            print(f"{1000 * (now - t0):9.1f} ms  #{n:<3} {label}{extra}")
    conn.close()
    if arrivals:
        span = 1000 * (arrivals[-1] - arrivals[0])
        print(f"{len(arrivals)} stamped events over {span:.0f} ms; lag after send:"
              f" min {min(lags):.1f} / max {max(lags):.1f} ms")
        # drip sends 10 chunks 200 ms apart: unbuffered delivery spreads them over ~1.8 s.
        print("INCREMENTAL" if span > 1000 and max(lags) < 150 else "BUFFERED?")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
