#!/usr/bin/env python3
"""Offline checks of the image build (no Docker engine needed).

  context_check.py context     Applies /.dockerignore to the files on disk, as Docker does, and
                               checks the build context: everything Cargo and the Dockerfile read
                               is in it, nothing from build outputs, caches or test harnesses is,
                               and it is small. Prints its size.
  context_check.py dockerfile  Checks deploy/Dockerfile: every base image pinned by digest, every
                               cargo build --locked, every COPY source in the context.

Docker's rules (moby/patternmatcher, as BuildKit applies them): blank lines and `#` lines are
ignored; each pattern is cleaned like a path (a leading or trailing `/` goes); `!` makes it an
exception; `*` and `?` never cross a `/`, `**` spans any number of directories; a pattern
matches a path or any directory above it; the last pattern that matches decides.
"""

import os
import re
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Well above today's context (about 1.3 MB); a context near it means something big got in.
MAX_CONTEXT_BYTES = 8 * 1024 * 1024
NEVER_IN = ("target/", ".cache/", ".git/", "fuzz/", "bench/", "tests/", "clients/", "docs/")
NEVER_IN_ANYWHERE = ("node_modules", "target", "__pycache__", ".venv", ".cache")


class Pattern:
    def __init__(self, line):
        self.exclusion = line.startswith("!")
        text = (line[1:] if self.exclusion else line).strip()
        text = os.path.normpath(text).lstrip("/") if text else ""
        if text in ("", "."):
            raise ValueError(f".dockerignore: {line!r} is not a pattern Docker accepts")
        self.text = text
        self.regex = re.compile(self._regex(text))

    @staticmethod
    def _regex(text):
        out, i = "^", 0
        while i < len(text):
            c = text[i]
            if text.startswith("**", i):
                i += 2
                if i < len(text) and text[i] == "/":
                    i += 1
                out += ".*" if i >= len(text) else "(.*/)?"
                continue
            if c == "*":
                out += "[^/]*"
            elif c == "?":
                out += "[^/]"
            elif c == "\\" and i + 1 < len(text):
                i += 1
                out += re.escape(text[i])
            elif c in "[]":
                out += c
            else:
                out += re.escape(c)
            i += 1
        return out + "$"

    def matches(self, path):
        if self.regex.match(path):
            return True
        parts = path.split("/")[:-1]
        return any(self.regex.match("/".join(parts[: n + 1])) for n in range(len(parts)))


def load_patterns(path):
    patterns = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if line and not line.startswith("#"):
                patterns.append(Pattern(line))
    return patterns


def excluded(patterns, path):
    result = False
    for p in patterns:
        # An exception can only undo an exclusion, and an exclusion only matters when not
        # already excluded: the same short cut Docker takes, with the same outcome.
        if p.exclusion != result:
            continue
        if p.matches(path):
            result = not p.exclusion
    return result


def self_test():
    """The examples of Docker's .dockerignore documentation, and the cases this file relies on."""
    cases = [
        (["*/temp*"], "somedir/temporary.txt", True),
        (["*/temp*"], "temp", False),
        (["*/temp*"], "somedir/temp/file", True),
        (["*/*/temp*"], "somedir/subdir/temporary.txt", True),
        (["*/*/temp*"], "somedir/temporary.txt", False),
        (["temp?"], "tempa", True),
        (["temp?"], "tempab", False),
        (["temp?"], "dir/tempa", False),
        (["**/*.go"], "a/b/c.go", True),
        (["**/*.go"], "c.go", True),
        (["*.md", "!README*.md", "README-secret.md"], "README.md", False),
        (["*.md", "!README*.md", "README-secret.md"], "README-secret.md", True),
        (["*.md", "!README*.md", "README-secret.md"], "other.md", True),
        (["*", "!crates/"], "crates/x/src/lib.rs", False),
        (["*", "!crates/"], ".git/HEAD", True),
        (["*", "!crates/", "**/target"], "crates/x/target/debug/y", True),
        (["*", "!crates/", "**/target"], "target/debug/y", True),
        (["/target/"], "target/release/x", True),
        (["**/node_modules"], "tests/conformance/node_modules/a/b.js", True),
    ]
    for lines, path, want in cases:
        got = excluded([Pattern(line) for line in lines], path)
        if got != want:
            sys.exit(f"pattern self-test: {lines} on {path}: excluded={got}, Docker says {want}")


def files_on_disk():
    """Every file and symlink below the root, as the context would see them (relative paths)."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            found.add(name if rel == "." else f"{rel}/{name}")
    return found


def disk_bytes(paths):
    """Bytes of these files, each hard-linked file once (Cargo hard-links its outputs)."""
    seen = {}
    for p in paths:
        try:
            st = os.lstat(os.path.join(ROOT, p))
        except FileNotFoundError:
            continue  # gone since the walk (a build running next to this check)
        seen[(st.st_dev, st.st_ino)] = st.st_size
    return sum(seen.values())


def git_files(*args):
    out = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-z", *args], check=True, capture_output=True
    ).stdout.decode()
    return {p for p in out.split("\0") if p}


def cargo_needs():
    """The files `cargo build --locked -p agui-gateway` reads: the workspace manifest and lock,
    then each member's manifest, its sources and every target file it declares or Cargo infers."""
    need = {"Cargo.toml", "Cargo.lock"}
    for extra in ("rust-toolchain", "rust-toolchain.toml", ".cargo/config", ".cargo/config.toml"):
        if os.path.exists(os.path.join(ROOT, extra)):
            need.add(extra)
    workspace = tomllib.load(open(os.path.join(ROOT, "Cargo.toml"), "rb"))
    sources = git_files("--cached", "--others", "--exclude-standard")
    for member in workspace["workspace"]["members"]:
        manifest = tomllib.load(open(os.path.join(ROOT, member, "Cargo.toml"), "rb"))
        need.add(f"{member}/Cargo.toml")
        need.update(p for p in sources if p.startswith(member + "/") and os.path.exists(os.path.join(ROOT, p)))
        kinds = {"bench": "benches", "test": "tests", "example": "examples", "bin": "src/bin"}
        for kind, folder in kinds.items():
            for target in manifest.get(kind, []):
                if "path" in target:
                    need.add(f"{member}/{target['path']}")
                else:
                    single = f"{member}/{folder}/{target['name']}.rs"
                    nested = f"{member}/{folder}/{target['name']}/main.rs"
                    need.add(single if os.path.exists(os.path.join(ROOT, single)) else nested)
        for lib_or_main in ("src/lib.rs", "src/main.rs"):
            if os.path.exists(os.path.join(ROOT, member, lib_or_main)):
                need.add(f"{member}/{lib_or_main}")
    return need


def dockerfile_copies():
    """The context paths deploy/Dockerfile copies (COPY without --from)."""
    text = open(os.path.join(ROOT, "deploy", "Dockerfile"), encoding="utf-8").read()
    text = text.replace("\\\n", " ")
    sources = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if any(w.startswith("--from") for w in words[1:]):
            continue
        sources.extend(a.rstrip("/") for a in args[:-1])
    return sources


def check_context():
    self_test()
    patterns = load_patterns(os.path.join(ROOT, ".dockerignore"))
    on_disk = files_on_disk()
    context = {p for p in on_disk if not excluded(patterns, p)}
    problems = []
    for path in sorted(cargo_needs()):
        if not os.path.exists(os.path.join(ROOT, path)):
            problems.append(f"{path}: Cargo reads it, but it does not exist")
        elif path not in context:
            problems.append(f"{path}: Cargo reads it, but .dockerignore leaves it out")
    for source in dockerfile_copies():
        if source not in context and not any(p.startswith(source + "/") for p in context):
            problems.append(f"{source}: deploy/Dockerfile copies it, but it is not in the context")
    for path in sorted(context):
        parts = path.split("/")
        if path.startswith(NEVER_IN) or any(
            part in NEVER_IN_ANYWHERE or part.startswith(".venv") for part in parts
        ):
            problems.append(f"{path}: in the context, but it never should be")
    size = disk_bytes(context)
    if size > MAX_CONTEXT_BYTES:
        problems.append(f"the context is {size} bytes, over {MAX_CONTEXT_BYTES}")
    left_out = disk_bytes(on_disk - context)
    for problem in problems[:20]:
        print(problem)
    if len(problems) > 20:
        print(f"... and {len(problems) - 20} more")
    print(
        f"build context: {len(context)} files, {size / 1e6:.2f} MB "
        f"(left out: {len(on_disk) - len(context)} files, {left_out / 1e6:.1f} MB)"
    )
    return not problems


FROM_RE = re.compile(r"^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$", re.I | re.M)


def check_dockerfile():
    text = open(os.path.join(ROOT, "deploy", "Dockerfile"), encoding="utf-8").read()
    joined = text.replace("\\\n", " ")
    problems, stages = [], set()
    froms = FROM_RE.findall(text)
    if not froms:
        problems.append("no FROM line")
    for image, stage in froms:
        if image.lower() not in stages and not re.fullmatch(r"[^@\s]+:[^@\s]+@sha256:[0-9a-f]{64}", image):
            problems.append(f"FROM {image}: not pinned as image:tag@sha256:<digest>")
        if stage:
            stages.add(stage.lower())
    builds = [line for line in joined.splitlines() if "cargo build" in line]
    if not builds:
        problems.append("no cargo build")
    for line in builds:
        for command in re.findall(r"cargo build[^&;]*", line):
            if "--locked" not in command.split():
                problems.append(f"{command.strip()}: without --locked")
    # The dependency layer loads the whole workspace before the sources are there: it must copy
    # every member's manifest and stand in for every target a manifest declares.
    copied = dockerfile_copies()
    workspace = tomllib.load(open(os.path.join(ROOT, "Cargo.toml"), "rb"))
    for member in workspace["workspace"]["members"]:
        if f"{member}/Cargo.toml" not in copied:
            problems.append(f"{member}/Cargo.toml: not copied into the dependency layer")
        manifest = tomllib.load(open(os.path.join(ROOT, member, "Cargo.toml"), "rb"))
        folders = {"bench": "benches", "test": "tests", "example": "examples", "bin": "src/bin"}
        declared = [
            f"{member}/{t.get('path', folders[kind] + '/' + t['name'] + '.rs')}"
            for kind in folders
            for t in manifest.get(kind, [])
        ]
        roots = [f"{member}/src/{f}" for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(ROOT, member, "src", f))]
        for path in declared + roots:
            if path not in joined:
                problems.append(f"{path}: the dependency layer has no stand-in for it")
    if not re.search(r"^USER\s+(65532|nonroot)", text, re.M):
        problems.append("the runtime does not run as the nonroot user")
    for problem in problems:
        print(problem)
    print(f"{len(froms)} FROM lines, {len(builds)} cargo builds: {len(problems)} problems")
    return not problems


if __name__ == "__main__":
    commands = {"context": check_context, "dockerfile": check_dockerfile}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(commands)}")
    sys.exit(0 if commands[sys.argv[1]]() else 1)
