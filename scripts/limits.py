#!/usr/bin/env python3
"""Checks the code's size limits (ARCHITECTURE.md, "Limits"):
- no `.rs` file is over 600 lines, its unit tests (`#[cfg(test)] mod ...`
  to the end of the file) not counted;
- no crate's `src/` has more than 14 top-level entries.

Every `.rs` file of the repository is checked (crates' sources and tests,
fuzz targets and checks), build output and caches excepted. Prints each
breach (exit 1), or "within limits" (exit 0).
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 600
MAX_ENTRIES = 14
SKIP = {"target", ".cache", "node_modules", ".git"}
# The unit tests' module: `#[cfg(test)]` on its own line, then `mod name`.
TESTS = re.compile(r"^#\[cfg\(test\)\]\s*\n(?:#\[[^\n]*\]\s*\n)*mod [a-z_0-9]+", re.M)


def rust_files():
    stack = [ROOT]
    while stack:
        directory = stack.pop()
        for path in sorted(directory.iterdir()):
            if path.name in SKIP:
                continue
            if path.is_dir() and not path.is_symlink():
                stack.append(path)
            elif path.suffix == ".rs":
                yield path


def lines_outside_tests(path):
    text = path.read_text(encoding="utf-8")
    match = TESTS.search(text)
    if match:
        text = text[: match.start()]
    return text.count("\n")


def main():
    breaches = []
    for path in rust_files():
        lines = lines_outside_tests(path)
        if lines > MAX_LINES:
            breaches.append(f"{path.relative_to(ROOT)}: {lines} lines outside its unit tests (at most {MAX_LINES})")
    for src in sorted((ROOT / "crates").glob("*/src")):
        entries = [p for p in src.iterdir() if not p.name.startswith(".")]
        if len(entries) > MAX_ENTRIES:
            breaches.append(f"{src.relative_to(ROOT)}: {len(entries)} top-level entries (at most {MAX_ENTRIES})")
    for breach in breaches:
        print(breach)
    if breaches:
        return 1
    print("within limits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
