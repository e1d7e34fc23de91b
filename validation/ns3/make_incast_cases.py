#!/usr/bin/env python3
"""Turn incast_reference's rows (validation/ns3/incast_ns3.jsonl from run_incast_grid.sh, incast_ns3_bursts.jsonl from
run_incast_bursts.sh) into the validation cases validation/cases/n1_tcp_incast.json: one case per configuration, its
expected value the median of ns-3's completion over its seeds, the incast job run on the same start offsets ns-3 drew
(start_offsets_ns) with ns-3's TCP departures from RFC 6937 and Linux (ns3_quirks) and its SYN size.
Usage: validation/ns3/make_incast_cases.py [GRID_ROWS] [BURST_ROWS] [OUT]"""
import json
import statistics
import sys

grid_path = sys.argv[1] if len(sys.argv) > 1 else "validation/ns3/incast_ns3.jsonl"
burst_path = sys.argv[2] if len(sys.argv) > 2 else "validation/ns3/incast_ns3_bursts.jsonl"
out_path = sys.argv[3] if len(sys.argv) > 3 else "validation/cases/n1_tcp_incast.json"
SETTINGS = ["senders", "size", "buffer", "rate", "delay_us", "min_rto_ms", "init_cwnd", "mss", "jitter_ns", "syn_bytes"]


def size_name(b):
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b % unit == 0:
            return f"{b // unit}{name}"
    return "1MB" if b == 1000000 else f"{b}B"


def read(path):
    points = {}
    for n, line in enumerate(open(path), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = [k for k in SETTINGS + ["seed", "completion_s", "timeouts", "start_offsets_ns"] if k not in row]
        if missing:
            sys.exit(f"{path}:{n}: row without {', '.join(missing)} (rerun the ns-3 script with today's incast_reference)")
        points.setdefault(tuple(row[k] for k in SETTINGS), []).append(row)
    return points


def case(key, runs, script, rows_file, burst):
    p = dict(zip(SETTINGS, key))
    runs = sorted(runs, key=lambda r: r["seed"])
    seeds = [r["seed"] for r in runs]
    if seeds != list(range(seeds[0], seeds[0] + len(seeds))):
        sys.exit(f"{rows_file}: seeds {seeds} of {p} are not consecutive")
    gbps = int(p["rate"].removesuffix("Gbps"))
    name = f"incast-{p['senders']}-senders-{size_name(p['size'])}-{size_name(p['buffer'])}" + (f"-{gbps}G" if burst else "")
    completions = [r["completion_s"] for r in runs]
    what = (f"{p['senders']} senders, {p['size']} bytes each (a parameter-server push of ResNet-50's gradients over 4 PS, "
            "rounded up as sim/incast_ports.cpp does)" if burst else f"{p['senders']} senders, {p['size']} bytes each")
    setup = {"kind": "incast", "senders": p["senders"], "size": p["size"], "buffer": p["buffer"]}
    if burst or gbps != 10:
        setup["rate_gbps"] = gbps
    # The rest of the row's configuration, where it is not the job's default (docs/formats.md).
    for field, default in (("delay_us", 1), ("min_rto_ms", 200), ("init_cwnd", 10), ("mss", 1448)):
        if p[field] != default:
            setup[field] = p[field]
    setup.update({"seeds": len(runs), "seed": seeds[0], "syn_bytes": p["syn_bytes"], "ns3_quirks": True,
                  "start_offsets_ns": [r["start_offsets_ns"] for r in runs]})
    return {
        "case": name,
        "measure": "completion_ms",
        "unit": "ms",
        "expected": round(statistics.median(completions) * 1e3, 4),
        "tolerance": 0.1,
        "source": f"validation/ns3/incast_reference.cc on Debian's ns-3 3.37, the median of seeds "
                  f"{seeds[0]}-{seeds[-1]} ({script}, {rows_file})",
        "quote": "completion_s over seeds {}-{}: {}; median time-outs {:g}".format(
            seeds[0], seeds[-1], ", ".join(f"{c:.9g}" for c in completions),
            statistics.median(r["timeouts"] for r in runs)),
        "known": [
            f"{what}, one drop-tail switch port of {p['buffer']} bytes toward the receiver",
            f"{gbps} Gb/s links of {p['delay_us']:g} us; TCP NewReno with SACK and PRR, MSS {p['mss']}, initial window "
            f"{p['init_cwnd']}, minimum RTO {p['min_rto_ms']:g} ms, every segment acknowledged",
            f"each sender starts at an offset ns-3 drew from [0, {p['jitter_ns']:g}) ns; the model starts its senders "
            "at the same offsets (start_offsets_ns) and the medians are compared",
            "the model runs TCP as ns-3 3.37 does where it departs from RFC 6937 and Linux (ns3_quirks: PRR's unsigned "
            "arithmetic, nothing sent in the open state after the FIN, the first data one clock tick after the "
            f"handshake, its 1 ns clock) and with its {p['syn_bytes']}-byte SYN (no MSS option)",
        ],
        "assumptions": ["the reference is a simulator, not a measurement: it checks the model's mechanisms, not the "
                        "real world"],
        "setup": setup,
    }


cases = [case(k, v, "validation/ns3/run_incast_grid.sh", "validation/ns3/incast_ns3.jsonl", False)
         for k, v in read(grid_path).items()]
cases += [case(k, v, "validation/ns3/run_incast_bursts.sh", "validation/ns3/incast_ns3_bursts.jsonl", True)
          for k, v in read(burst_path).items()]
doc = {
    "group": "TCP incast",
    "description": "N-to-1 TCP incast through one drop-tail switch port: the tcp-incast network model against the "
                   "packet-level ns-3 program validation/ns3/incast_reference.cc on issue 19's grid (2 to 64 senders, "
                   "32 KiB and 256 KiB port buffers, 64 KiB and 1 MB per sender), and 3 senders of 32 MiB at 10 and "
                   "40 Gb/s through 32 KiB, 128 KiB and 4 MiB ports, the bursts of parameter-server training; medians "
                   "of 5 seeds of 1 us start jitter, the model started at ns-3's offsets. The flow model loses nothing "
                   "here; docs/network-models.md has the table. Written by validation/ns3/make_incast_cases.py.",
    "cases": cases,
}
with open(out_path, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"make_incast_cases: {len(cases)} cases in {out_path}")
