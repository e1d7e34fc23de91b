#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and run each from the project's fixtures as seeds.
#   scripts/fuzz.sh                 smoke: 10 s per target (what CI runs; about 3 minutes for the 14 targets)
#   scripts/fuzz.sh 1000000         at least that many executions per target (docs/fuzzing.md records the counts)
#   scripts/fuzz.sh N fuzz_gdr ...  only the targets named
# Exit status 1 if a target crashes; its reproducer is left in build-fuzz/fuzz/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
command -v clang++ > /dev/null || { echo "fuzz: clang++ not found (apt-get install clang)" >&2; exit 1; }
# Every target is a tests/fuzz/fuzz_*.cpp (tests/fuzz/CMakeLists.txt); its seeds are the regular files of
# tests/fuzz/seeds/<target>/ (tests/fuzz/make_wire_seeds.py writes them), unless `seeds` below names other seed
# directories. Without names, all of them run, in name order.
declare -A seeds=(
  [fuzz_traces]="tests/traces/fixtures tests/fuzz/seeds/fuzz_traces"
  [fuzz_simgrid_platform]="models/hw/network tests/fuzz/seeds/fuzz_simgrid_platform"
  [fuzz_rpc_frame]=""
  [fuzz_scenario]="scenarios scenarios/examples scenarios/faults tests/fuzz/seeds/fuzz_scenario"
  [fuzz_sweep]="scenarios/sweeps tests/fuzz/seeds/fuzz_sweep"
  [fuzz_hw_profile]="$(echo models/hw/*/) tests/fuzz/seeds/fuzz_hw_profile"
  [fuzz_validation_cases]="validation/cases tests/fuzz/seeds/fuzz_validation_cases"
)
mapfile -t all < <(for f in tests/fuzz/fuzz_*.cpp; do basename "$f" .cpp; done | sort)
for t in "${all[@]}"; do
  [ -n "${seeds[$t]+set}" ] || seeds[$t]="tests/fuzz/seeds/$t"
done
runs="${1:-}"
shift || true
[ $# -gt 0 ] && targets=("$@") || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -n "${seeds[$t]+set}" ] || { echo "fuzz: unknown target $t (known: ${all[*]})" >&2; exit 2; }
done
# -O1 with line tables only (as the sanitizer builds, scripts/sanitize.sh): the reports keep their file:line, and the
# build takes about a third less time than -O2 -g.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
  -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only -DNDEBUG" -DCMAKE_C_FLAGS_FUZZ="-O1 -gline-tables-only -DNDEBUG" \
  -DTENSORPATH_FUZZ=ON > /dev/null
ninja -C build-fuzz "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  for d in ${seeds[$t]}; do
    for f in "$d"/*; do
      [ -f "$f" ] && cp -n "$f" "$corpus/$(basename "$d")-$(basename "$f")"
    done
  done
  if [ -n "$runs" ]; then limit=(-runs="$runs"); else limit=(-max_total_time=10); fi
  echo "fuzz: $t ${limit[*]}"
  rc=0
  start=$(date +%s)
  (cd build-fuzz/fuzz && ./"$t" "${limit[@]}" -print_final_stats=1 "../corpus/$t" > "../$t.log" 2>&1) || rc=$?
  grep -E "stat::number_of_executed_units|SUMMARY|ERROR: " "build-fuzz/$t.log" || true
  echo "fuzz: $t took $(( $(date +%s) - start )) s"
  if [ "$rc" -ne 0 ]; then echo "fuzz: $t FAILED (exit $rc; log build-fuzz/$t.log)" >&2; status=1; fi
done
exit $status
