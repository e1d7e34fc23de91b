#!/usr/bin/env python3
"""RoCE congestion: simulated seconds per second of computer time, the roce network model (and the flow model)
against packet-level ns-3 on the same fabric (issue 19's benchmark). For each sender count, all run the same N-to-1
incast under PFC + ECN + DCQCN (S bytes per sender; 100 Gb/s, 1 us links; HPCC's defaults), and each reports its
own time inside the process, so that start-up is left out: ns-3 the wall time of Simulator::Run
(validation/ns3/roce_reference), the models their CPU time (`tensorpath roce --json`, field cpu_s). Prints the
completions side by side, simulated seconds per second for each, and the speed-up of the roce model over ns-3.

Usage: bench/roce_bench.py [--build build] [--senders N ...] [--size BYTES] [--buffer BYTES] [--scenario incast]
Needs the ns-3 reference (libns3-dev installed, then a build): build/validation/roce_reference.
Results: docs/network-models.md.
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--senders", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--size", type=int, default=4000000)
    ap.add_argument("--buffer", type=int, default=2000000)
    ap.add_argument("--scenario", default="incast", choices=["incast", "victim"])
    a = ap.parse_args()
    ref = os.path.join(a.build, "validation", "roce_reference")
    tp = os.path.join(a.build, "tensorpath")
    for path in (ref, tp):
        if not os.access(path, os.X_OK):
            sys.exit(f"roce_bench: {path} is not built (ns-3: install libns3-dev with scripts/setup.sh, then build)")
    print(f"RoCE {a.scenario}, {a.size} bytes per sender, switch buffer {a.buffer} bytes, PFC + ECN + DCQCN; "
          "simulated s per s of computer time")
    print(f" {'senders':>8} | {'ns-3 [ms]':>10} {'roce [ms]':>10} {'flow [ms]':>10} | {'ns-3 sim/s':>11} "
          f"{'roce sim/s':>11} {'flow sim/s':>11} | {'ns-3 [s]':>9} {'roce [s]':>9} {'speed-up':>9}")
    total_ref = total_model = 0.0
    for n in a.senders:
        args = [f"--scenario={a.scenario}", f"--senders={n}", f"--size={a.size}", f"--buffer={a.buffer}"]
        r = subprocess.run([ref] + args, capture_output=True, text=True, check=True)
        ns3 = json.loads(r.stdout)
        m = subprocess.run([tp, "roce", "--scenario", a.scenario, "--senders", str(n), "--size", str(a.size),
                            "--buffer", str(a.buffer), "--network-model", "roce,flow", "--json"],
                           capture_output=True, text=True, check=True)
        rows = {json.loads(line)["model"]: json.loads(line) for line in m.stdout.splitlines() if line.strip()}
        roce, flow = rows["roce"], rows["flow"]
        total_ref += ns3["wall_s"]
        total_model += roce["cpu_s"]

        def rate(row, key):
            return row["completion_s"] / max(row[key], 1e-9)

        print(f" {n:>8} | {ns3['completion_s'] * 1e3:>10.3f} {roce['completion_s'] * 1e3:>10.3f} "
              f"{flow['completion_s'] * 1e3:>10.3f} | {rate(ns3, 'wall_s'):>11.3g} {rate(roce, 'cpu_s'):>11.3g} "
              f"{rate(flow, 'cpu_s'):>11.3g} | {ns3['wall_s']:>9.4f} {roce['cpu_s']:>9.4f} "
              f"{ns3['wall_s'] / max(roce['cpu_s'], 1e-9):>8.0f}x")
    print(f"all: ns-3 {total_ref:.3f} s, the roce model {total_model:.4f} s ({total_ref / max(total_model, 1e-9):.0f}x)")


if __name__ == "__main__":
    main()
