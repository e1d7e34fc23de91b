#!/usr/bin/env bash
# Set up, build and run the built-in default scenario (scenarios/default.json: the HKUST VGG16 transport comparison first).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec "${TENSORPATH_BUILD_DIR:-build}/tensorpath" run "$@"   # the built-in default scenario
