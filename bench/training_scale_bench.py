#!/usr/bin/env python3
"""Training at scale: CPU time, wall time and peak RSS of `tensorpath train` against the GPU count, with the growth
exponent of each series (log-log fit) and each run's CPU time per simulated GPU-step as a ratio of the smallest run's
in the same series (1.0 = linear cost). Series (issue 17's benchmarks):

  resnet50-baidu   ResNet-50, ring allreduce with Baidu's coordinator (5 ms tick, no fusion), analytical collectives,
                   dgx-a100-8gpu hosts, 2 steps (64 to 4096 GPUs; default 64 128 256 512)
  resnet50-horovod the same with Horovod's defaults (1 ms cycle, 128 MiB fusion)
  vgg16-ps         VGG16, parameter servers (as many as workers), one GPU per worker, gRPC, 3 steps (8 to 128
                   workers; default 8 16 32 64)
  vgg16-ar-grpc    VGG16 through AR-gRPC, hkust-4node, 2 GPUs per worker, as many PS, 3 steps (2 to 8 GPUs)

With --symmetric the allreduce series run with --symmetric-ranks (two hosts' ranks simulated for the whole cluster,
docs/model.md "Symmetric ranks"; 1,024 to 65,536 GPUs by default), and each size up to --whole-up-to N (default 512)
also runs with every rank simulated: the table then gives the simulated step of both and their ratio (the reference
run the collapse is checked against).

AR-gRPC runs read 4 chunks per RDMA READ and FIN (chunk trains, the simulator's default, docs/model.md "Chunk
trains"). With --chunk-by-chunk-reference each AR-gRPC size also runs with --ar-chunk-by-chunk (a READ and a FIN per
chunk, as published): the table gives both simulated steps, their ratio and the chunk-by-chunk run's CPU time (the
reference the shortcut is checked against).

With --transport T the vgg16-ps series runs over T instead of gRPC. With --short-comms-reference each size also runs
with TENSORPATH_COMMS_IN_SIMGRID=1 (every comm a SimGrid comm, docs/model.md "Short comms"): the table gives both
simulated steps, their ratio and the reference run's CPU time. With --clock-reference each size also runs with
TENSORPATH_CLOCK_IN_SIMGRID=1 (a round of SimGrid's engine at every timer, docs/performance.md "Running ahead of
SimGrid's clock"), likewise.

Usage: bench/training_scale_bench.py [--tensorpath build/tensorpath] [--series NAME] [--gpus N ...]
                                     [--symmetric [--whole-up-to N]] [--chunk-by-chunk-reference] [--transport T]
                                     [--short-comms-reference] [--clock-reference]
Each run is refused by the budget check beyond TENSORPATH_TIME_LIMIT (this script sets 60m unless it is set).
Needs /usr/bin/time (Debian's `time` package). Results: docs/performance.md.
"""
import argparse
import json
import math
import os
import subprocess
import sys

SERIES = {
    "resnet50-baidu": (
        "--model resnet50 --mode allreduce --library baidu --collective-mode analytical --hw dgx-a100-8gpu "
        "--steps 2 --no-reference --transport mpi --mpi-optimal-path --mpi-nonblocking-recv --workers {n}",
        [64, 128, 256, 512], 2),
    "resnet50-horovod": (
        "--model resnet50 --mode allreduce --library horovod --collective-mode analytical --hw dgx-a100-8gpu "
        "--steps 2 --no-reference --transport mpi --mpi-optimal-path --mpi-nonblocking-recv --workers {n}",
        [64, 128, 256], 2),
    "vgg16-ps": (
        "--model vgg16 --mode ps --hw dgx-a100-8gpu --gpus-per-worker 1 --steps 3 --no-reference --transport grpc "
        "--workers {n}",
        [8, 16, 32, 64], 3),
    "vgg16-ar-grpc": (
        "--model vgg16 --mode ps --hw hkust-4node --gpus-per-worker 2 --steps 3 --no-reference --transport ar_grpc "
        "--workers {w}",
        [2, 4, 8], 3),
}


def measure(tp, args, env=None):
    """(cpu seconds, wall seconds, peak RSS in MB, exit status, simulated step seconds or None) of one run, children
    included; `env`: variables to add to the environment."""
    cmd = ["/usr/bin/time", "-f", "TIME %U %S %e %M", tp, "train"] + args + ["--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, **(env or {})))
    step = None
    try:
        step = json.loads(p.stdout)["runs"][0]["step_time"]
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    for line in p.stderr.splitlines():
        if line.startswith("TIME "):
            u, s, e, m = line.split()[1:]
            return float(u) + float(s), float(e), float(m) / 1024.0, p.returncode, step
    return None, None, None, p.returncode, step


def positive_int(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a GPU count of 1 or more, got {text}")
    return n


def exponent(points):
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y and y > 0]
    if len(pts) < 2:
        return float("nan")
    n = len(pts)
    sx = sum(x for x, _ in pts)
    sy = sum(y for _, y in pts)
    sxx = sum(x * x for x, _ in pts)
    sxy = sum(x * y for x, y in pts)
    d = n * sxx - sx * sx
    return (n * sxy - sx * sy) / d if d > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tensorpath", default="build/tensorpath")
    ap.add_argument("--series", choices=sorted(SERIES), action="append")
    ap.add_argument("--gpus", type=positive_int, nargs="+")
    ap.add_argument("--symmetric", action="store_true", help="allreduce series with --symmetric-ranks")
    ap.add_argument("--whole-up-to", type=int, default=512, help="with --symmetric: also every rank up to N GPUs")
    ap.add_argument("--chunk-by-chunk-reference", action="store_true",
                    help="each AR-gRPC size also with --ar-chunk-by-chunk (a READ and a FIN per chunk)")
    ap.add_argument("--transport", choices=["grpc", "verbs_v1", "verbs_v2", "gdr", "mpi", "ar_grpc"],
                    help="the vgg16-ps series over this transport instead of grpc")
    ap.add_argument("--short-comms-reference", action="store_true",
                    help="each size also with TENSORPATH_COMMS_IN_SIMGRID=1 (every comm in SimGrid)")
    ap.add_argument("--clock-reference", action="store_true",
                    help="each size also with TENSORPATH_CLOCK_IN_SIMGRID=1 (a SimGrid round at every timer)")
    o = ap.parse_args()
    # Reference runs of the same command under an environment switch: (option set, variable, column title).
    references = [(o.short_comms_reference, "TENSORPATH_COMMS_IN_SIMGRID", "all comms"),
                  (o.clock_reference, "TENSORPATH_CLOCK_IN_SIMGRID", "per timer")]
    references = [(var, title) for on, var, title in references if on]
    if not os.path.exists("/usr/bin/time"):
        sys.exit("training_scale_bench: needs /usr/bin/time (apt-get install time)")
    os.environ.setdefault("TENSORPATH_TIME_LIMIT", "60m")
    failed = False
    names = o.series or sorted(SERIES)
    if o.symmetric:
        names = [n for n in names if "--mode allreduce" in SERIES[n][0]]
    if o.chunk_by_chunk_reference:
        names = [n for n in names if "--transport ar_grpc" in SERIES[n][0] or
                 (n == "vgg16-ps" and o.transport == "ar_grpc")]
    if not names:
        ap.error("no series left to run: --symmetric takes the allreduce series, --chunk-by-chunk-reference the AR-gRPC "
                 "ones (vgg16-ar-grpc, or vgg16-ps with --transport ar_grpc)")
    if o.transport and "vgg16-ps" not in names:
        ap.error("--transport applies to the vgg16-ps series only (add --series vgg16-ps)")
    for name in names:
        template, sizes, steps = SERIES[name]
        if o.symmetric:
            template += " --symmetric-ranks"
            sizes = [64, 256, 1024, 4096, 16384, 65536]
        if o.transport and name == "vgg16-ps":
            template = template.replace("--transport grpc", "--transport " + o.transport)
        # A series given in workers ({w}) of 2 GPUs each: N GPUs are N / 2 workers.
        fill = (lambda n: template.format(w=max(1, n // 2))) if "{w}" in template else (lambda n: template.format(n=n))
        print(f"\n{name}: tensorpath train {template.format(n='N', w='N/2')}")
        print(f"{'GPUs':>6s} {'cpu[s]':>9s} {'wall[s]':>9s} {'RSS[MB]':>9s} {'cpu/GPU-step':>13s} {'vs first':>9s}" +
              (f" {'step[ms]':>10s} {'whole[ms]':>10s} {'sym/whole':>9s} {'whole cpu[s]':>12s}" if o.symmetric else "") +
              (f" {'step[ms]':>10s} {'by chunk':>10s} {'ratio':>9s} {'chunk cpu[s]':>12s}" if o.chunk_by_chunk_reference
               else "") +
              "".join(f" {'step[ms]':>10s} {title:>10s} {'ratio':>9s} {'ref cpu[s]':>10s}" for _, title in references))
        points, first = [], None
        for n in o.gpus or sizes:
            cpu, wall, rss, rc, step = measure(o.tensorpath, fill(n).split())
            if rc != 0 or cpu is None:
                print(f"{n:6d} failed or refused (exit {rc})")
                failed = failed or rc not in (0, 2)
                continue
            per = cpu / (n * steps)
            first = first or per
            points.append((n, cpu))
            row = f"{n:6d} {cpu:9.2f} {wall:9.2f} {rss:9.0f} {per * 1e3:11.2f}ms {per / first:8.2f}x"
            if o.symmetric:
                row += f" {step * 1e3:10.1f}" if step else f" {'-':>10s}"
                if n <= o.whole_up_to:
                    wcpu, _, _, wrc, whole = measure(o.tensorpath,
                                                     template.replace(" --symmetric-ranks", "").format(n=n).split())
                    if wrc == 0 and whole and step:
                        row += f" {whole * 1e3:10.1f} {step / whole:9.4f} {wcpu:12.2f}"
                    else:
                        row += f" whole run failed or refused (exit {wrc})"
                        failed = failed or wrc not in (0, 2)
            if o.chunk_by_chunk_reference:
                row += f" {step * 1e3:10.1f}" if step else f" {'-':>10s}"
                ccpu, _, _, crc, exact = measure(o.tensorpath, (fill(n) + " --ar-chunk-by-chunk").split())
                if crc == 0 and exact and step:
                    row += f" {exact * 1e3:10.1f} {step / exact:9.4f} {ccpu:12.2f}"
                else:
                    row += f" chunk-by-chunk run failed or refused (exit {crc})"
                    failed = failed or crc not in (0, 2)
            for var, _ in references:
                row += f" {step * 1e3:10.1f}" if step else f" {'-':>10s}"
                rcpu, _, _, rrc, ref = measure(o.tensorpath, fill(n).split(), {var: "1"})
                if rrc == 0 and ref and step:
                    row += f" {ref * 1e3:10.1f} {step / ref:9.4f} {rcpu:10.2f}"
                else:
                    row += f" reference run failed or refused (exit {rrc})"
                    failed = failed or rrc not in (0, 2)
            print(row)
        e = exponent(points)
        print(f"growth exponent of the CPU time: {e:.2f} (1.0: linear in the GPUs)" if not math.isnan(e) else
              "growth exponent of the CPU time: none (it needs two sizes that ran)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
