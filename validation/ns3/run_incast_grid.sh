#!/usr/bin/env bash
# Run the packet-level ns-3 incast reference over issue 19's grid (N = 2..64 senders, two port buffers, two message
# sizes; 10 Gb/s links, 1 us each, Linux's TCP defaults) and write one JSON row per point and seed: the rows that
# `tensorpath incast --reference FILE` and validation/cases/n1_tcp_incast.json compare the tcp-incast model with.
# Usage: validation/ns3/run_incast_grid.sh [BUILD_DIR] [OUT] (default build, validation/ns3/incast_ns3.jsonl).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
out="${2:-$here/incast_ns3.jsonl}"
ref="$build/validation/incast_reference"
[ -x "$ref" ] || { echo "run_incast_grid: $ref not built (install libns3-dev: scripts/setup.sh, then build)" >&2; exit 2; }
# Each point runs with every sender starting at an offset in [0, 1 us) drawn from seeds 1..5: `tensorpath incast
# --reference` compares the medians (one run at one nanosecond can turn on which segment takes a port's last slot).
jitter="${JITTER_NS:-1000}"
seeds="${SEEDS:-5}"
tmp="$out.tmp"
: > "$tmp"
for size in 65536 1000000; do
  for buffer in 32768 262144; do
    for n in 2 4 8 16 32 64; do
      for seed in $(seq 1 "$seeds"); do
        "$ref" --senders=$n --size=$size --buffer=$buffer --jitter=$jitter --seed=$seed >> "$tmp"
      done
    done
  done
done
mv "$tmp" "$out"
echo "run_incast_grid: $(wc -l < "$out") rows in $out"
