#!/usr/bin/env bash
# Run the packet-level ns-3 RoCE reference (roce_reference.cc: PFC + DCQCN on output-queued shared-buffer switches)
# over its grid and write one JSON row per run: the rows the flow-level congestion models (models/congestion/) are
# compared with. Grid: incast (DCQCN, hpcc profile, N = 2..16, 1 MB and 4 MB, 32 MB and 2 MB buffers; and PFC only,
# N = 4 and 16), PFC head-of-line blocking (victim, N = 8, DCQCN on and off; M = 0 local senders as specified, plus
# M = 4 where s2 itself pauses s1->s2), two-flow convergence, and long-lived flows with the DCQCN paper's
# parameters at 40 Gb/s (rates and queue averaged over [warmup, duration]).
# Usage: validation/ns3/run_roce_grid.sh [BUILD_DIR] [OUT] (default build, validation/ns3/roce_ns3.jsonl).
# REF=/path/to/roce_reference runs that binary instead of BUILD_DIR/validation/roce_reference.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
out="${2:-$here/roce_ns3.jsonl}"
ref="${REF:-$build/validation/roce_reference}"
[ -x "$ref" ] || { echo "run_roce_grid: $ref not built (install libns3-dev: scripts/setup.sh, then build)" >&2; exit 2; }
tmp="$out.tmp"
: > "$tmp"
start=$SECONDS
# Every point runs on seeds 1..SEEDS (the ECN marking draws): `tensorpath roce --reference` compares medians, as one
# run's marks decide when each sender's rate is cut.
seeds="${SEEDS:-5}"
run() { for seed in $(seq 1 "$seeds"); do "$ref" "$@" --seed=$seed >> "$tmp"; done; }
for buffer in 32000000 2000000; do
  for size in 1000000 4000000; do
    for n in 2 4 8 16; do
      run --scenario=incast --profile=hpcc --dcqcn=1 --senders=$n --size=$size --buffer=$buffer --jitter=0
    done
  done
done
for n in 4 16; do
  run --scenario=incast --profile=hpcc --dcqcn=0 --senders=$n --size=4000000 --buffer=2000000
done
for local in 0 4; do
  for dcqcn in 1 0; do
    run --scenario=victim --senders=8 --local=$local --size=2000000 --buffer=2000000 --dcqcn=$dcqcn
  done
done
run --scenario=converge --size=25000000 --start2=0.0005 --dcqcn=1
for n in 2 4 8 16; do
  run --scenario=longflows --profile=paper --rate=40 --senders=$n --duration=0.05 --warmup=0.02 --buffer=32000000
done
mv "$tmp" "$out"
unfinished=$(grep -v '"scenario": "longflows"' "$out" | grep -c '"completion_s": null' || true)
echo "run_roce_grid: $(wc -l < "$out") rows in $out ($unfinished with unfinished flows), $((SECONDS - start)) s"
