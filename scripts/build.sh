#!/usr/bin/env bash
# Configure and build tensorpath into build/ (or $TENSORPATH_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TENSORPATH_BUILD_DIR:-build}
BUILD_TYPE=${TENSORPATH_BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
