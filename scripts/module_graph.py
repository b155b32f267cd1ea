#!/usr/bin/env python3
"""Checks that the crates, and each crate's module import graph, have no cycle.

Three levels are checked, as a reader walks the code:
- the workspace's crates, joined by their `Cargo.toml` dependencies on each
  other (dev-dependencies too: Cargo allows a cycle through them);
- the crate's top-level modules (`src/foo.rs` or `src/foo/`), joined by
  every `crate::foo` path in their files;
- the children of each directory module, joined by `super::sibling` paths
  (a child naming its parent, `super::Item`, is the parent's vocabulary and
  not an edge).

Prints each graph as `module -> deps`, then every cycle found (exit 1), or
"no cycles" (exit 0). `--quiet` prints only the cycles and the verdict.
"""

import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRATES = sorted(p for p in (ROOT / "crates").iterdir() if (p / "src").is_dir())

CRATE_PATH = re.compile(r"\bcrate::(?:\{([^}]*)\}|([a-z_][a-z0-9_]*))")
SUPER_PATH = re.compile(r"\bsuper::(?:\{([^}]*)\}|([a-z_][a-z0-9_]*))")
COMMENT = re.compile(r"//.*")


def code_of(path):
    return COMMENT.sub("", path.read_text(encoding="utf-8"))


def names_in(match):
    group, single = match.groups()
    if single:
        return [single]
    # `crate::{a::X, b}`: the first segment of each item.
    return [item.strip().split("::")[0] for item in group.split(",") if item.strip()]


def module_files(module_path):
    """The files of a module: `foo.rs`, or every `.rs` under `foo/`."""
    if module_path.is_dir():
        return sorted(module_path.rglob("*.rs"))
    return [module_path]


def top_level_graph(src):
    modules = {}
    for entry in sorted(src.iterdir()):
        if entry.is_dir():
            modules[entry.name] = entry
        elif entry.suffix == ".rs" and entry.stem not in ("lib", "main"):
            modules[entry.stem] = entry
    graph = {}
    for name, path in modules.items():
        deps = set()
        for file in module_files(path):
            for match in CRATE_PATH.finditer(code_of(file)):
                deps.update(n for n in names_in(match) if n in modules and n != name)
        graph[name] = deps
    return graph


def directory_graphs(src):
    graphs = {}
    for directory in sorted(d for d in src.rglob("*") if d.is_dir()):
        children = {}
        for entry in sorted(directory.iterdir()):
            if entry.is_dir():
                children[entry.name] = module_files(entry)
            elif entry.suffix == ".rs" and entry.stem != "mod":
                children[entry.stem] = [entry]
        graph = {}
        for name, files in children.items():
            deps = set()
            for file in files:
                for match in SUPER_PATH.finditer(code_of(file)):
                    deps.update(n for n in names_in(match) if n in children and n != name)
            graph[name] = deps
        graphs[str(directory.relative_to(ROOT))] = graph
    return graphs


def crate_graph():
    """Each crate's dependencies on the workspace's other crates."""
    manifests = {}
    for crate in CRATES:
        manifest = tomllib.loads((crate / "Cargo.toml").read_text(encoding="utf-8"))
        manifests[manifest["package"]["name"]] = manifest
    tables = ("dependencies", "dev-dependencies", "build-dependencies")
    return {
        name: {d for t in tables for d in manifest.get(t, {}) if d in manifests and d != name}
        for name, manifest in manifests.items()
    }


def cycles(graph):
    """Every elementary cycle's node set, found by DFS back edges."""
    found = []
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                found.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def self_test():
    """The checker itself must see a cycle where there is one."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []
    match = CRATE_PATH.search("use crate::{read::{A, B}, event::Event};")
    assert match is not None and names_in(match)[0] == "read"


def main():
    self_test()
    quiet = "--quiet" in sys.argv
    bad = 0
    graphs = {"crates": crate_graph()}
    for crate in CRATES:
        src = crate / "src"
        graphs[str(src.relative_to(ROOT))] = top_level_graph(src)
        graphs.update(directory_graphs(src))
    for where, graph in graphs.items():
        if not quiet:
            print(f"{where}:")
            for node in sorted(graph):
                print(f"  {node} -> {', '.join(sorted(graph[node])) or '-'}")
        for cycle in cycles(graph):
            bad += 1
            print(f"CYCLE in {where}: {' -> '.join(cycle)}")
    print("no cycles" if bad == 0 else f"{bad} cycle(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
