#!/usr/bin/env bash
# Runs one shipped scenario and compares what `tensorpath run` prints with its expected-output file, byte for byte
# (the way SimGrid's .tesh files do); ctest entries `example:<name>` (docs/cli.md, "Expected outputs").
# Usage: compare_output.sh TENSORPATH REPO_ROOT SCENARIO EXPECTED
#   SCENARIO: a path relative to REPO_ROOT (scenarios/examples/grpc.json), or `default` for `tensorpath run` without a
#   file (the built-in scenarios/default.json, the README's command).
#   EXPECTED: the expected-output file, relative to REPO_ROOT (scenarios/expected/examples/grpc.out).
# What is compared: standard output and the exit status (0). The text holds simulated times only (no wall-clock
# time, no host path: the scenario is named relative to the repository root, which is the working directory), so
# it is compared whole, unfiltered. Standard error must be empty.
# Refresh the expectations on purpose with scripts/refresh-expected.sh.
set -u
if [ "${1:-}" = --orphans ]; then
  # `compare_output.sh --orphans REPO_ROOT`: every expected file has its scenario (a renamed or deleted example
  # must not leave an expectation that nothing compares).
  cd "$2" || exit 2
  status=0
  for f in scenarios/expected/examples/*.out; do
    [ -e "$f" ] || continue
    s="scenarios/examples/$(basename "$f" .out).json"
    [ -f "$s" ] || { echo "FAIL: $f has no scenario $s (remove it, or run scripts/refresh-expected.sh)"; status=1; }
  done
  [ "$status" -eq 0 ] && echo "ok: every expected file has its scenario"
  exit "$status"
fi
tp=$1 root=$2 scenario=$3 expected=$4
cd "$root" || exit 2
if [ ! -f "$expected" ]; then
  echo "FAIL: $scenario has no expected-output file $expected (create it with scripts/refresh-expected.sh)"
  exit 1
fi
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if [ "$scenario" = default ]; then
  "$tp" run >"$out" 2>"$err"
else
  "$tp" run "$scenario" >"$out" 2>"$err"
fi
rc=$?
status=0
if [ "$rc" -ne 0 ]; then
  echo "FAIL: tensorpath run $scenario exited with $rc (expected 0)"
  status=1
fi
if [ -s "$err" ]; then
  echo "FAIL: tensorpath run $scenario wrote to standard error:"
  cat "$err"
  status=1
fi
if ! diff -u --label "$expected (expected)" --label "tensorpath run $scenario (actual)" "$expected" "$out"; then
  echo "FAIL: the output of tensorpath run $scenario differs from $expected (diff above). If the change is meant,"
  echo "refresh the expectation with scripts/refresh-expected.sh and say why in the commit message."
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: tensorpath run $scenario matches $expected"
exit "$status"
