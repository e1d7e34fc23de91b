#!/usr/bin/env python3
"""Estimate against measurement: the up-front estimate of each command (the budget check's, made to print it by a
tiny TENSORPATH_TIME_LIMIT) next to its measured wall time, CPU time and peak RSS (GNU time, children included),
and their ratios. The simulator runs on one core: on a quiet machine wall time is CPU time, on a busy one it is
longer, so the estimates are of the CPU time. The per-unit costs in sim/job_estimate.cpp and emulator/job_estimate.cpp were measured with these commands;
rerun it after a change that makes jobs cheaper or dearer, and on a new machine (docs/resource-bounds.md).

Usage: bench/estimate_check.py [--tensorpath build/tensorpath] [--all] [COMMAND ...]
  COMMAND: a tensorpath command line in quotes ("allreduce --ranks 1024 --size 4K"); default: the quick set, or
  with --all the whole calibration set (about half an hour on 2 cores).
Needs /usr/bin/time (Debian's `time` package).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

QUICK = [
    "allreduce --mode analytical --ranks 1024 --size 4K",
    "allreduce --mode flow --ranks 256 --size 4K",
    "allreduce --mode protocol --ranks 32 --size 4K",
    "transfer --transport verbs_v2 --tensors 3000 --steps 3 --size 4K",
    "transfer --transport ar_grpc --tensors 10 --steps 3 --size 64M",
    "perftest --lat --iters 200000 --size 64",
    "pcie-copy --iters 20000",
    "train --model resnet50 --hw hkust-4node --transport grpc,verbs_v2 --no-reference",
    "train --mode allreduce --model resnet50 --hw hkust-4node --transport mpi --collective-mode analytical "
    "--mpi-optimal-path --mpi-nonblocking-recv --no-reference",
    "emulate --transport grpc --size 64M --steps 5",
]
ALL = QUICK + [
    "allreduce --mode analytical --ranks 2048 --size 4K",
    "allreduce --mode flow --ranks 512 --size 4K",
    "allreduce --mode protocol --ranks 64 --size 4K",
    "transfer --hw /tmp/tp_estimate_check/c2000.json --transport verbs_v2 --size 4K --steps 1",
    "transfer --transport mpi --tensors 3000 --steps 3 --size 1M",
    "train --model resnet50 --hw hkust-4node --transport gdr --no-reference",
    "train --model resnet50 --hw hkust-4node --transport ar_grpc --no-reference",
    "train --model resnet50 --hw hkust-4node --transport verbs_v1 --no-reference",
    "train --model resnet50 --hw hkust-4node --transport mpi --no-reference",
    "train --model resnet50 --hw hkust-k40m-cx3 --workers 8 --transport grpc --no-reference",
    "train --model resnet50 --hw hkust-k40m-cx3 --workers 8 --transport verbs_v2 --no-reference",
    "train --model resnet50 --hw hkust-k40m-cx3 --workers 16 --ps 4 --transport verbs_v2 --no-reference",
    "train --model vgg16 --hw osu-ri2-k80-edr --workers 4 --transport ar_grpc --no-reference",
    "train --mode allreduce --model resnet50 --hw hkust-4node --transport mpi --no-reference",
    "train --mode allreduce --model resnet50 --hw hkust-k40m-cx3 --workers 128 --transport mpi "
    "--collective-mode analytical --mpi-optimal-path --mpi-nonblocking-recv --no-reference",
    "emulate --transport verbs_v2 --size 4K --steps 1000",
]

TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400, "years": 365 * 86400}
BYTE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def estimate(tp, args):
    env = dict(os.environ, TENSORPATH_TIME_LIMIT="1e-9")
    p = subprocess.run([tp] + args, env=env, capture_output=True, text=True)
    m = re.search(r"an estimated ([\d.e+]+) (\w+) of memory and ([\d.e+]+) (\w+)", p.stdout + p.stderr)
    if not m:
        return None, None
    return float(m.group(1)) * BYTE_UNITS[m.group(2)], float(m.group(3)) * TIME_UNITS[m.group(4)]


def measure(tp, args):
    p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", tp] + args, capture_output=True, text=True)
    wall, user, system, rss_kb = p.stderr.strip().split("\n")[-1].split()
    return float(wall), float(user) + float(system), float(rss_kb) * 1024, p.returncode


def platform_cluster(hosts):
    """A cluster of hkust-k40m-cx3 hosts whose network is a SimGrid platform file of `hosts` hosts."""
    d = "/tmp/tp_estimate_check"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/net{hosts}.xml", "w") as f:
        f.write(f'<?xml version="1.0"?>\n<platform version="4.1">\n<cluster id="c" prefix="node" suffix="" '
                f'radical="0-{hosts - 1}" speed="1Gf" bw="100Gbps" lat="0.6us" bb_bw="1600Gbps" bb_lat="0.09us"/>\n'
                f'</platform>\n')
    with open(f"{d}/c{hosts}.json", "w") as f:
        f.write(f'{{"kind": "cluster", "name": "c{hosts}", "description": "estimate check", "hosts": [{{"host": '
                f'"hkust-k40m-cx3", "prefix": "node"}}], "switch": "mellanox-sb7800", "network": "net{hosts}.xml"}}')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tensorpath", default="build/tensorpath")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("commands", nargs="*")
    o = ap.parse_args()
    commands = o.commands or (ALL if o.all else QUICK)
    platform_cluster(2000)
    print(f"{'command':90s} {'est s':>8s} {'wall s':>8s} {'cpu s':>8s} {'cpu/est':>7s} {'est MB':>7s} {'got MB':>7s} "
          f"{'got/est':>7s}")
    for c in commands:
        args = shlex.split(c)
        eb, es = estimate(o.tensorpath, args)
        wall, cpu, rss, rc = measure(o.tensorpath, args)
        if es is None:
            print(f"{c[:90]:90s} (no estimate printed; exit {rc})")
            continue
        print(f"{c[:90]:90s} {es:8.1f} {wall:8.1f} {cpu:8.1f} {cpu / es:7.2f} {eb / 1e6:7.0f} {rss / 1e6:7.0f} "
              f"{rss / eb:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
