#!/usr/bin/env bash
# Run the packet-level ns-3 incast reference on the bursts of parameter-server training (issue 19): 3 workers push
# 32 MiB each into one PS's switch port (ResNet-50's gradients over 4 PS, rounded up as sim/incast_ports.cpp does),
# at 10 and 40 Gb/s, through ports of 32 KiB, 128 KiB and 4 MiB; seeds 1-5 of 1 us start jitter. These are the sizes
# the tcp-incast network model charges inside training jobs; validation/cases/n1_tcp_incast.json holds them as cases.
# Usage: validation/ns3/run_incast_bursts.sh [BUILD_DIR] [OUT] (default build, validation/ns3/incast_ns3_bursts.jsonl).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
out="${2:-$here/incast_ns3_bursts.jsonl}"
ref="$build/validation/incast_reference"
[ -x "$ref" ] || { echo "run_incast_bursts: $ref not built (install libns3-dev: scripts/setup.sh, then build)" >&2; exit 2; }
tmp="$out.tmp"
: > "$tmp"
for rate in 10Gbps 40Gbps; do
  for buffer in 32768 131072 4194304; do
    for seed in 1 2 3 4 5; do
      "$ref" --senders=3 --size=33554432 --buffer=$buffer --rate=$rate --jitter=1000 --seed=$seed >> "$tmp"
    done
  done
done
mv "$tmp" "$out"
echo "run_incast_bursts: $(wc -l < "$out") rows in $out"
