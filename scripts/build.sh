#!/usr/bin/env bash
# Configures and builds oscar.cpp into build/ (binaries in build/bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release
else
  # Configure again: it picks up webui/node_modules installed since (the web UI).
  cmake -S . -B build >/dev/null
fi
cmake --build build -j "$(nproc)"
