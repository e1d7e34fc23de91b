#!/usr/bin/python3
"""Pictures from tensorpath outputs, without Jupyter (the notebooks in notebooks/ call the same functions).

  scripts/plot.py bars ROWS.jsonl --x nic --series transport --y step_ms [--where model=vgg16] --out step.png
  scripts/plot.py scaling ROWS.jsonl --series transport [--where ...] --out scaling.png   (images/s against GPUs)
  scripts/plot.py breakdown ROWS.jsonl --x transport [--where ...] --out breakdown.png    (stacked critical path)
  scripts/plot.py sim-vs-emu COMPARE.json --out error.png      (tensorpath emulate --compare --json COMPARE.json)

ROWS.jsonl is a `tensorpath sweep` rows file. Uses Debian's python3-matplotlib (Agg backend, no display).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PATH_PARTS = [("path_compute_ms", "compute"), ("path_copy_ms", "host copies"),
              ("path_registration_ms", "registration"), ("path_pcie_ms", "PCIe"),
              ("path_network_ms", "network"), ("path_aggregate_apply_ms", "PS sums/updates"),
              ("path_cpu_ms", "gRPC threads (CPU)"), ("path_waiting_ms", "waiting")]


def load_rows(path, where=()):
    """Rows of a sweep rows file as (params, metrics) pairs; object-valued params are flattened."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}: line {n}: not a JSON row: {e}")
            if "metrics" not in r:
                continue  # an error row
            params = {}
            for k, v in r.get("params", {}).items():
                if isinstance(v, dict):
                    params.update({k2: str(v2) for k2, v2 in v.items()})
                else:
                    params[k] = str(v)
            if all(params.get(k) == v for k, v in where):
                rows.append((params, r["metrics"]))
    if not rows:
        raise SystemExit(f"{path}: no rows with metrics" + (f" where {where}" if where else ""))
    return rows


def bars(rows, x, series, y, title=None):
    xs = sorted({p[x] for p, _ in rows}, key=str)
    ss = sorted({p[series] for p, _ in rows}, key=str)
    fig, ax = plt.subplots(figsize=(max(6, len(xs) * len(ss) * 0.35), 4))
    width = 0.8 / len(ss)
    for i, s in enumerate(ss):
        vals = []
        for xv in xs:
            got = [m[y] for p, m in rows if p[x] == xv and p[series] == s and y in m]
            vals.append(sum(got) / len(got) if got else 0)
        ax.bar([k + i * width for k in range(len(xs))], vals, width, label=s)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(xs))])
    ax.set_xticklabels(xs, rotation=20, ha="right")
    ax.set_ylabel(y)
    ax.set_title(title or f"{y} per {x} and {series}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def scaling(rows, series, y="images_per_second", title=None):
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in sorted({p[series] for p, _ in rows}, key=str):
        pts = sorted((m["gpus"], m[y]) for p, m in rows if p[series] == s and "gpus" in m and y in m)
        if pts:
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=s)
    gpus = sorted({m["gpus"] for _, m in rows if "gpus" in m})
    one = [m["images_per_second"] / m["speedup_over_one_gpu"] for _, m in rows
           if m.get("speedup_over_one_gpu") and "images_per_second" in m]
    if one and y == "images_per_second":
        ax.plot(gpus, [g * one[0] for g in gpus], "k--", linewidth=1, label="linear (1-GPU x N)")
    ax.set_xlabel("GPUs")
    ax.set_ylabel(y)
    ax.set_title(title or f"{y} against GPUs")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def breakdown(rows, x, title=None):
    labels, parts = [], {name: [] for _, name in PATH_PARTS}
    for p, m in sorted(rows, key=lambda r: str(r[0].get(x))):
        labels.append(p.get(x, "?"))
        for key, name in PATH_PARTS:
            parts[name].append(m.get(key, 0.0))
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 0.6), 4))
    bottom = [0.0] * len(labels)
    for _, name in PATH_PARTS:
        ax.bar(range(len(labels)), parts[name], bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, parts[name])]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel("ms of the step's critical path")
    ax.set_title(title or f"where the step goes, per {x}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def sim_vs_emu(path, title=None):
    with open(path) as f:
        data = json.load(f)
    fig, ax = plt.subplots(figsize=(7, 4))
    transports = sorted({r["transport"] for r in data["rows"]})
    for t in transports:
        pts = sorted((r["bytes"], 100 * r["error"]) for r in data["rows"] if r["transport"] == t)
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=t)
    ax.axhspan(-5, 5, color="green", alpha=0.1, label="+-5 %")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tensor bytes")
    ax.set_ylabel("simulated / emulated - 1 (%)")
    ax.set_title(title or "simulator against emulator (median |error| %.1f %%, p90 %.1f %%)"
                 % (100 * data["median_abs_error"], 100 * data["p90_abs_error"]))
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["bars", "scaling", "breakdown", "sim-vs-emu"])
    ap.add_argument("input")
    ap.add_argument("--x", default="transport")
    ap.add_argument("--series", default="transport")
    ap.add_argument("--y", default="step_ms")
    ap.add_argument("--where", action="append", default=[], help="FIELD=VALUE (repeatable)")
    ap.add_argument("--title")
    ap.add_argument("--out", required=True, help="PNG file")
    a = ap.parse_args(argv)
    where = []
    for w in a.where:
        if "=" not in w:
            raise SystemExit(f"--where: expected FIELD=VALUE, got {w!r}")
        where.append(tuple(w.split("=", 1)))
    if a.kind == "sim-vs-emu":
        fig = sim_vs_emu(a.input, a.title)
    else:
        rows = load_rows(a.input, where)
        if a.kind == "bars":
            fig = bars(rows, a.x, a.series, a.y, a.title)
        elif a.kind == "scaling":
            fig = scaling(rows, a.series, title=a.title)
        else:
            fig = breakdown(rows, a.x, a.title)
    fig.savefig(a.out, dpi=100)
    print(a.out)


if __name__ == "__main__":
    main(sys.argv[1:])
