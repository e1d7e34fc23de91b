#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and run each from the project's fixtures as seeds.
#   scripts/fuzz.sh            smoke: 15 s per target (what CI runs)
#   scripts/fuzz.sh 1000000    at least that many executions per target (docs/fuzzing.md records the counts)
# Exit status 1 if a target crashes; its reproducer is left in build-fuzz/fuzz/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
command -v clang++ > /dev/null || { echo "fuzz: clang++ not found (apt-get install clang)" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORPATH_FUZZ=ON > /dev/null
ninja -C build-fuzz fuzz_traces fuzz_simgrid_platform fuzz_rpc_frame
runs="${1:-}"
declare -A seeds=(
  [fuzz_traces]="tests/traces/fixtures"
  [fuzz_simgrid_platform]="models/hw/network"
  [fuzz_rpc_frame]=""
)
status=0
for t in fuzz_traces fuzz_simgrid_platform fuzz_rpc_frame; do
  corpus="build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  [ -n "${seeds[$t]}" ] && cp -n ${seeds[$t]}/* "$corpus"/ 2>/dev/null || true
  if [ -n "$runs" ]; then limit=(-runs="$runs"); else limit=(-max_total_time=15); fi
  echo "fuzz: $t ${limit[*]}"
  rc=0
  (cd build-fuzz/fuzz && ./"$t" "${limit[@]}" -print_final_stats=1 "../corpus/$t" > "../$t.log" 2>&1) || rc=$?
  grep -E "stat::number_of_executed_units|SUMMARY|ERROR: " "build-fuzz/$t.log" || true
  if [ "$rc" -ne 0 ]; then echo "fuzz: $t FAILED (exit $rc; log build-fuzz/$t.log)" >&2; status=1; fi
done
exit $status
