#!/usr/bin/env bash
# Set up, build and run the default scenario (scenarios/default.json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec "${TENSORPATH_BUILD_DIR:-build}/tensorpath" run scenarios/default.json "$@"
