#!/usr/bin/env python3
"""Differential check for converter refactors: the same random upstream
bodies through `agui-gateway convert` of a base commit and of the working
tree must give byte-identical output, in both formats, with and without
interrupts.

Bodies are random sequences of the stream items found in tests/golden
inputs and tests/agents/recordings, some truncated mid-item, framed as SSE.
Ids are sequential and no timestamps are written, so any difference is a
behaviour change.

    scripts/convert_differential.py --base 93be84b --bodies 2500 --seed 7

The base is built once into a git worktree under .cache/ (its own target
directory); the working tree's binary must be built already
(`cargo build -p agui-gateway`). Exit 1 when anything differs; the first
differing bodies are kept as .cache/differential/case-N.sse.
"""

import argparse
import pathlib
import random
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "differential"


def sse_payloads(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for block in text.split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            yield "\n".join(data)


def stream_items():
    items = []
    for path in sorted((ROOT / "tests" / "golden").glob("*/input.*")):
        text = path.read_bytes().decode("utf-8", "replace")
        if path.suffix == ".jsonl":
            items += [line for line in text.splitlines() if line.strip()]
        else:
            items += list(sse_payloads(text))
    for path in sorted((ROOT / "tests" / "agents" / "recordings").glob("*.sse")):
        items += list(sse_payloads(path.read_text(encoding="utf-8", errors="replace")))
    return items


def base_binary(rev):
    tree = CACHE / f"tree-{rev}"
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT, check=True)
    target = CACHE / f"target-{rev}"
    subprocess.run(
        ["cargo", "build", "-q", "-p", "agui-gateway", "--target-dir", str(target)],
        cwd=tree,
        check=True,
    )
    return target / "debug" / "agui-gateway"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    base = base_binary(args.base)
    head = ROOT / "target" / "debug" / "agui-gateway"
    rng = random.Random(args.seed)
    items = stream_items()
    body_path = CACHE / "body.sse"
    differ = 0
    for index in range(args.bodies):
        chosen = rng.choices(items, k=rng.randint(1, 25))
        if rng.random() < 0.2:
            cut = rng.randrange(len(chosen))
            chosen[cut] = chosen[cut][: rng.randrange(len(chosen[cut]) + 1)]
        body = "".join("data: " + item.replace("\n", "\ndata: ") + "\n\n" for item in chosen)
        body_path.write_text(body, encoding="utf-8")
        for fmt in ("agui", "hector"):
            for extra in ([], ["--interrupts"]):
                # `--dialect` is the old name of `--format`; both versions read it.
                command = ["convert", "--dialect", fmt, *extra, str(body_path)]
                old = subprocess.run([base, *command], capture_output=True)
                new = subprocess.run([head, *command], capture_output=True)
                if (old.stdout, old.returncode) != (new.stdout, new.returncode):
                    differ += 1
                    if differ <= 3:
                        (CACHE / f"case-{differ}.sse").write_text(body, encoding="utf-8")
                        print(f"differs: body {index}, {fmt} {' '.join(extra)}", file=sys.stderr)
    runs = args.bodies * 4
    print(f"{len(items)} stream items; {runs} conversions ({args.bodies} bodies x 2 formats x interrupts off/on): {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
