#!/usr/bin/env python3
"""Turn roce_reference's rows (validation/ns3/roce_ns3.jsonl, written by run_roce_grid.sh) into the validation cases
validation/cases/n2_roce_dcqcn.json: one case per point of the grid, its expected value the median of ns-3's seeds
on the scenario's judged figure (incast and converge: the last completion; victim: the victim flow's completion;
longflows: the hot port's mean queue over the window), the roce job run on the same seeds.
Usage: validation/ns3/make_roce_cases.py [ROWS] [OUT]"""
import json
import statistics
import sys

rows_path = sys.argv[1] if len(sys.argv) > 1 else "validation/ns3/roce_ns3.jsonl"
out_path = sys.argv[2] if len(sys.argv) > 2 else "validation/cases/n2_roce_dcqcn.json"
SETTINGS = ["scenario", "senders", "local", "size", "rate_gbps", "delay_us", "buffer", "dcqcn", "ecn", "pfc", "profile",
            "kmin", "kmax", "pmax", "t_alpha_us", "t_dec_us", "t_inc_us", "g", "fast_recovery", "ai_mbps", "hai_mbps",
            "min_rate_gbps", "cnp_interval_us", "byte_counter", "jitter_ns"]
points = {}
for n, line in enumerate(open(rows_path), 1):
    if not line.strip():
        continue
    row = json.loads(line)
    key = tuple((k, row[k]) for k in SETTINGS) + ((("start2", row["start2"]),) if row["scenario"] == "converge" else ()) \
        + ((("duration", row["duration"]), ("warmup", row["warmup"])) if row["scenario"] == "longflows" else ())
    points.setdefault(key, []).append(row)

cases = []
for key, runs in points.items():
    p = dict(key)
    scen = p["scenario"]
    seeds = sorted(r["seed"] for r in runs)
    if scen == "victim":
        measure, unit, values = "victim_completion_ms", "ms", [r["victim_completion_s"] * 1e3 for r in runs]
    elif scen == "longflows":
        measure, unit, values = "mean_queue_bytes", "bytes", [r["window_queue_bytes"] for r in runs]
    else:
        measure, unit, values = "completion_ms", "ms", [r["completion_s"] * 1e3 for r in runs]
    name = f"{scen}-{p['senders']}" + (f"+{p['local']}" if p["local"] else "") + \
        (f"-{p['size'] // 1000000}MB" if scen != "longflows" else "") + f"-buffer{p['buffer'] // 1000000}MB" + \
        ("" if p["dcqcn"] else "-pfc-only") + ("-paper" if p["profile"] == "paper" else "")
    setup = {"kind": "roce", "scenario": scen, "senders": p["senders"], "size": p["size"], "rate_gbps": p["rate_gbps"],
             "delay_us": p["delay_us"], "buffer": p["buffer"], "profile": p["profile"], "dcqcn": bool(p["dcqcn"]),
             "ecn": bool(p["ecn"]), "pfc": bool(p["pfc"]), "seed": seeds[0], "seeds": len(seeds)}
    if p["local"]:
        setup["local"] = p["local"]
    if scen == "converge":
        setup["start2_us"] = p["start2"] * 1e6
    if scen == "longflows":
        setup["duration_ms"] = p["duration"] * 1e3
        setup["warmup_ms"] = p["warmup"] * 1e3
    pauses = statistics.median(sum(v["frames"] for v in r["pauses"].values()) for r in runs)
    cases.append({
        "case": name,
        "measure": measure,
        "unit": unit,
        "expected": round(statistics.median(values), 6),
        "tolerance": 0.1,
        "source": "validation/ns3/roce_reference.cc on Debian's ns-3 3.37, the median of seeds "
                  f"{seeds[0]}-{seeds[-1]} (validation/ns3/run_roce_grid.sh, validation/ns3/roce_ns3.jsonl)",
        "quote": f"{measure} over seeds {seeds[0]}-{seeds[-1]}: " + ", ".join(f"{v:.6g}" for v in values) +
                 f"; median PAUSE frames {pauses:g}, median CNPs {statistics.median(r['cnps'] for r in runs):g}",
        "known": [
            f"{scen}: {p['senders']} senders" + (f" and {p['local']} beside the receiver" if p["local"] else "") +
            (f", {p['size']} bytes each" if scen != "longflows" else ", endless flows") +
            f"; switch buffer {p['buffer']} bytes (PFC: HPCC's switch MMU, reserve 4 KB, dynamic threshold 1/8, "
            "headroom 3 one-way BDPs)",
            f"{p['rate_gbps']} Gb/s links of {p['delay_us']} us; 1000-byte payloads in 1062-byte frames; "
            f"DCQCN {'on' if p['dcqcn'] else 'off'} ({p['profile']} profile), ECN Kmin {p['kmin']} / Kmax {p['kmax']} "
            f"bytes, Pmax {p['pmax']}",
            "ECN's marking draws differ between the model and ns-3: each runs seeds " +
            f"{seeds[0]}-{seeds[-1]} of its own and the medians are compared",
        ],
        "assumptions": [
            "the reference is a simulator, not a measurement: it checks the model's mechanisms, not the real world",
        ],
        "setup": setup,
    })

doc = {
    "group": "RoCE DCQCN",
    "description": "RoCE congestion (PFC, ECN, DCQCN) on four small fabrics: the roce network model against the "
                   "packet-level ns-3 program validation/ns3/roce_reference.cc on its grid (N-to-1 incast with deep "
                   "and shallow buffers, with and without DCQCN; a victim flow behind a paused trunk; two flows "
                   "converging; long-lived flows with the DCQCN paper's parameters), medians of 5 seeds. "
                   "docs/network-models.md has the table.",
    "cases": cases,
}
with open(out_path, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"make_roce_cases: {len(cases)} cases in {out_path}")
