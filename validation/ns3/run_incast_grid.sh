#!/usr/bin/env bash
# Run the packet-level ns-3 incast reference over issue 19's grid (N = 2..64 senders, two port buffers, two message
# sizes; 10 Gb/s links, 1 us each, Linux's TCP defaults) and write one JSON row per point: the rows that
# `tensorpath incast --reference FILE` and validation/cases/n1_tcp_incast.json compare the tcp-incast model with.
# Usage: validation/ns3/run_incast_grid.sh [BUILD_DIR] [OUT] (default build, validation/ns3/incast_ns3.jsonl).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
out="${2:-$here/incast_ns3.jsonl}"
ref="$build/validation/incast_reference"
[ -x "$ref" ] || { echo "run_incast_grid: $ref not built (install libns3-dev: scripts/setup.sh, then build)" >&2; exit 2; }
tmp="$out.tmp"
: > "$tmp"
for size in 65536 1000000; do
  for buffer in 32768 262144; do
    for n in 2 4 8 16 32 64; do
      "$ref" --senders=$n --size=$size --buffer=$buffer >> "$tmp"
    done
  done
done
mv "$tmp" "$out"
echo "run_incast_grid: $(wc -l < "$out") rows in $out"
