#!/usr/bin/env bash
# Rewrites the expected-output files of the shipped scenarios (scenarios/expected/, compared byte for byte by the
# ctest entries `example:<name>`): run it after a change that is meant to alter what `tensorpath run` prints, read
# `git diff scenarios/expected/`, and say in the commit message why the numbers moved (docs/cli.md, "Expected outputs").
# Usage: scripts/refresh-expected.sh [TENSORPATH]   (default: build/tensorpath)
set -euo pipefail
cd "$(dirname "$0")/.."
tp=${1:-build/tensorpath}
[ -x "$tp" ] || { echo "refresh-expected: no tensorpath binary at $tp (build first: scripts/build.sh)" >&2; exit 2; }
mkdir -p scenarios/expected/examples
# Expected files whose scenario is gone are removed, so that the two stay one to one.
for f in scenarios/expected/examples/*.out; do
  [ -e "$f" ] || continue
  [ -f "scenarios/examples/$(basename "$f" .out).json" ] || { rm -- "$f"; echo "removed $f (no scenario)"; }
done
"$tp" run > scenarios/expected/default.out
echo "wrote scenarios/expected/default.out"
for s in scenarios/examples/*.json; do
  name=$(basename "$s" .json)
  "$tp" run "$s" > "scenarios/expected/examples/$name.out"
  echo "wrote scenarios/expected/examples/$name.out"
done
