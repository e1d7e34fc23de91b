#!/usr/bin/env python3
"""TCP incast: simulated seconds per second of computer time, the tcp-incast network model against packet-level
ns-3 on the same incast (issue 19's benchmark). For each sender count, both run the same N-to-1 incast (S bytes per
sender through one drop-tail port; 10 Gb/s, 1 us links); each reports its own time inside the process, so that
start-up is left out of both: ns-3 the wall time of Simulator::Run (validation/ns3/incast_reference), the model its
CPU time (`tensorpath incast --json`, field cpu_s). Prints simulated seconds per second for each, their ratio, and
the two completions side by side.

Usage: bench/incast_bench.py [--build build] [--senders N ...] [--size BYTES] [--buffer BYTES]
Needs the ns-3 reference (libns3-dev installed, then a build): build/validation/incast_reference.
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
    ap.add_argument("--senders", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64])
    ap.add_argument("--size", type=int, default=1000000)
    ap.add_argument("--buffer", type=int, default=262144)
    a = ap.parse_args()
    ref = os.path.join(a.build, "validation", "incast_reference")
    tp = os.path.join(a.build, "tensorpath")
    for path in (ref, tp):
        if not os.access(path, os.X_OK):
            sys.exit(f"incast_bench: {path} is not built (ns-3: install libns3-dev with scripts/setup.sh, then build)")
    print(f"TCP incast, {a.size} bytes per sender into a {a.buffer}-byte port; simulated s per s of computer time")
    print(f" {'senders':>8} | {'ns-3 [ms]':>10} {'model [ms]':>10} | {'ns-3 sim/s':>11} {'model sim/s':>12} | "
          f"{'ns-3 [s]':>9} {'model [s]':>9} {'speed-up':>9}")
    total_ref = total_model = 0.0
    for n in a.senders:
        r = subprocess.run([ref, f"--senders={n}", f"--size={a.size}", f"--buffer={a.buffer}"], capture_output=True,
                           text=True, check=True)
        ns3 = json.loads(r.stdout)
        m = subprocess.run([tp, "incast", "--senders", str(n), "--size", str(a.size), "--buffer", str(a.buffer),
                            "--ns3-quirks", "--syn-bytes", "56", "--network-model", "tcp-incast", "--json"],
                           capture_output=True, text=True, check=True)
        model = json.loads(m.stdout)
        ns3_rate = ns3["completion_s"] / ns3["wall_s"]
        model_rate = model["completion_s"] / max(model["cpu_s"], 1e-6)
        total_ref += ns3["wall_s"]
        total_model += model["cpu_s"]
        # The speed-up is of the computer time for the same incast (the simulated spans differ where the two
        # disagree on a time-out, so simulated seconds per second alone would flatter one side).
        print(f" {n:>8} | {ns3['completion_s'] * 1e3:>10.3f} {model['completion_s'] * 1e3:>10.3f} | "
              f"{ns3_rate:>11.3g} {model_rate:>12.3g} | {ns3['wall_s']:>9.4f} {model['cpu_s']:>9.4f} "
              f"{ns3['wall_s'] / max(model['cpu_s'], 1e-6):>8.0f}x")
    print(f"all sizes: ns-3 {total_ref:.3f} s, the model {total_model:.4f} s ({total_ref / max(total_model, 1e-6):.0f}x)")


if __name__ == "__main__":
    main()
