#!/usr/bin/env bash
# Set up, build and run the whole test suite (ctest: one process per test case).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${TENSORPATH_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
