#!/usr/bin/env python3
"""Plots and tabulates the proxy comparison (direct / nginx / agui-gateway / Node alternative).

    .cache/venv-bench/bin/python bench/plot.py RESULTS.json [--out bench/results/latency.png]

Reads one results file: {"machine": str, "date": str, "runs": [run, ...]}, where each run is
    {"setup": "direct|gateway|nginx|node", "concurrency": int, "streams_ok": int, "errors": int,
     "events": int, "duration_s": float, "events_per_s": float,
     "ttfe_ms": {"p50", "p90", "p99"}, "added_latency_ms": {"p50", "p90", "p99", "max"},
     "proxy_rss_kib": int|null, "proxy_rss_per_stream_kib": float|null, "proxy_cpu_s": float|null,
     "cpu_us_per_event": float (perf task-clock), "syscalls_per_event": float (perf raw_syscalls)}
(a bare list of runs is accepted too). Writes a PNG of curves over the concurrent streams (log
axes), one line style per setup: the added latency (p50/p90/p99) on top, the proxy's CPU per
event, system calls per event and memory per stream below; prints the Markdown tables to stdout. Needs matplotlib (bash bench/setup.sh makes .cache/venv-bench).
"""

import argparse
import json
import math
import os
import sys

SETUP_ORDER = ["direct", "nginx", "gateway", "node"]
LABELS = {
    "direct": "direct (fake upstream, the limit)",
    "nginx": "nginx (plain SSE proxy, no conversion)",
    "gateway": "agui-gateway (A2A → AG-UI)",
    "node": "Node @ag-ui/a2a + encoder (A2A → AG-UI)",
}
# One distinct style per setup: colour, marker and dash pattern all differ, so the lines stay
# apart in greyscale too.
STYLES = {
    "direct": dict(color="#555555", marker="o", linestyle=":"),
    "nginx": dict(color="#1f77b4", marker="s", linestyle="--"),
    "gateway": dict(color="#d62728", marker="D", linestyle="-"),
    "node": dict(color="#2ca02c", marker="^", linestyle="-."),
}
EXTRA_STYLES = [dict(color=c, marker=m, linestyle="-") for c, m in
                [("#9467bd", "v"), ("#8c564b", "P"), ("#e377c2", "X"), ("#17becf", "*")]]
PERCENTILES = ["p50", "p90", "p99"]
# Log axes cannot show 0 (the direct setup adds nothing by definition, or a tiny negative
# amount from clock granularity): such points are drawn at this floor and marked in the table.
FLOOR_MS = 0.01


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        doc = {"machine": "unknown machine", "date": "unknown date", "runs": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise SystemExit(f"{path}: expected an object with a 'runs' list")
    for i, r in enumerate(doc["runs"]):
        for key in ("setup", "concurrency"):
            if key not in r:
                raise SystemExit(f"{path}: runs[{i}] has no '{key}'")
    return doc


def ordered_setups(runs):
    present = {r["setup"] for r in runs}
    return [s for s in SETUP_ORDER if s in present] + sorted(present - set(SETUP_ORDER))


def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def fmt(x, digits=1):
    x = num(x)
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def table(headers, rows, align):
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def markdown(doc):
    runs = doc["runs"]
    setups = ordered_setups(runs)
    key = lambda r: (setups.index(r["setup"]), r["concurrency"])
    runs = sorted(runs, key=key)
    lines = [f"Machine: {doc.get('machine', '?')}. Date: {doc.get('date', '?')}.", ""]

    lines += ["### Added latency (ms; event arrival at the client minus its send time upstream)", ""]
    rows = []
    for r in runs:
        a = r.get("added_latency_ms") or {}
        rows.append([r["setup"], f"{r['concurrency']:,}"] + [fmt(a.get(p), 2) for p in PERCENTILES + ["max"]])
    lines += [table(["setup", "streams", "p50", "p90", "p99", "max"], rows, "lrrrrr"), ""]

    lines += ["### Throughput, time to first event, errors", ""]
    rows = []
    for r in runs:
        t = r.get("ttfe_ms") or {}
        ok, err = r.get("streams_ok"), r.get("errors")
        rows.append([r["setup"], f"{r['concurrency']:,}",
                     "–" if ok is None else f"{ok:,}",
                     "–" if err is None else (f"**{err:,}**" if err else "0"),
                     "–" if r.get("events") is None else f"{r['events']:,}",
                     fmt(r.get("duration_s"), 1), fmt(r.get("events_per_s"), 0),
                     fmt(t.get("p50"), 1), fmt(t.get("p99"), 1)])
    lines += [table(["setup", "streams", "ok", "errors", "events", "duration s", "events/s",
                     "TTFE p50 ms", "TTFE p99 ms"], rows, "lrrrrrrrr"), ""]

    lines += ["### Proxy process cost (the process between client and upstream; none for direct)", ""]
    rows = []
    for r in runs:
        rss = num(r.get("proxy_rss_kib"))
        rows.append([r["setup"], f"{r['concurrency']:,}",
                     "–" if rss is None else f"{rss / 1024:.1f}",
                     fmt(r.get("proxy_rss_per_stream_kib"), 1), fmt(r.get("proxy_cpu_s"), 2),
                     fmt(r.get("cpu_us_per_event"), 2), fmt(r.get("syscalls_per_event"), 2)])
    lines += [table(["setup", "streams", "RSS MiB", "RSS KiB / stream", "CPU s",
                     "CPU µs / event (perf)", "syscalls / event (perf)"], rows, "lrrrrrr")]
    return "\n".join(lines)


# The cost panels: (run key, title, y label).
COSTS = [("cpu_us_per_event", "proxy CPU per event", "µs per event (perf task-clock)"),
         ("syscalls_per_event", "proxy system calls per event", "system calls per event (perf)"),
         ("proxy_rss_per_stream_kib", "proxy memory per stream", "RSS KiB per stream")]


def curve(runs, setup, value):
    """(streams, value) points of one setup, in order; values under the floor raised to it."""
    pts, floored = [], False
    for r in sorted((r for r in runs if r["setup"] == setup), key=lambda r: r["concurrency"]):
        v = num(value(r))
        if v is None:
            continue
        if v < FLOOR_MS:
            v, floored = FLOOR_MS, True
        pts.append((r["concurrency"], v))
    return pts, floored


def plot(doc, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    # Curves over the stream counts; the ceiling runs (`-max`, one scale) stay in the tables.
    runs = [r for r in doc["runs"] if not r["setup"].endswith("-max")]
    setups = ordered_setups(runs)
    levels = sorted({r["concurrency"] for r in runs})
    fig, grid = plt.subplots(2, 3, figsize=(15, 9.5))
    floored = False
    extra = iter(EXTRA_STYLES)
    styles = {s: STYLES.get(s) or next(extra, dict(marker="o", linestyle="-")) for s in setups}
    panels = [(f"{p} added latency", "added latency per event (ms)",
               lambda r, p=p: (r.get("added_latency_ms") or {}).get(p)) for p in PERCENTILES]
    panels += [(title, label, lambda r, key=key: r.get(key)) for key, title, label in COSTS]
    for ax, (title, label, value) in zip(grid.flat, panels):
        for s in setups:
            pts, low = curve(runs, s, value)
            floored |= low
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, label=LABELS.get(s, s), linewidth=2, markersize=7, **styles[s])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(levels))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        if levels:
            ax.set_xlim(levels[0] / 1.6, levels[-1] * 1.6)
        ax.set_title(title)
        ax.set_xlabel("concurrent streams")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", axis="y", alpha=0.12)
    handles, labels = grid.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False,
               bbox_to_anchor=(0.5, -0.01))
    title = (f"Proxies compared over concurrent streams (log scales): {doc.get('machine', '?')}, "
             f"{doc.get('date', '?')}")
    if floored:
        title += f"\n(values under {FLOOR_MS} drawn at {FLOOR_MS})"
    fig.suptitle(title, fontsize=12)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="results JSON file")
    ap.add_argument("--out", default=os.path.join(here, "results", "latency.png"),
                    help="PNG to write (default: bench/results/latency.png)")
    args = ap.parse_args()
    doc = load(args.results)
    if not doc["runs"]:
        raise SystemExit(f"{args.results}: no runs")
    plot(doc, args.out)
    print(markdown(doc))
    print(f"\nwrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
