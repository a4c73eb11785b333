#!/usr/bin/env bash
# Cross-builds the inference engine and its tests for 64-bit ARM Linux into
# build-arm64/ (Debian's g++-aarch64-linux-gnu and the arm64 GoogleTest from
# `bash scripts/setup-deps.sh --arm64`). Only the engine's libraries are built
# (OSCAR_ENGINE_ONLY: no server, tools or web UI, whose dependencies would all
# need arm64 -dev packages and add nothing to what ARM changes). The tests run
# the native build's oscar-mkmodel (build/bin) to write their tiny models, so
# that is built first when missing. scripts/test-arm64.sh runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "build-arm64: aarch64-linux-gnu-g++ missing: run bash scripts/setup-deps.sh --arm64" >&2
  exit 1
fi
JOBS="${JOBS:-$(nproc)}"
if [ ! -x build/bin/oscar-mkmodel ]; then
  [ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(command -v ninja >/dev/null && echo -G Ninja)
  cmake --build build -j "$JOBS" --target oscar-mkmodel
fi
if [ ! -f build-arm64/CMakeCache.txt ]; then
  LAUNCHER=()
  if command -v ccache >/dev/null; then
    LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B build-arm64 $(command -v ninja >/dev/null && echo -G Ninja) -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/aarch64-linux-gnu.cmake" \
    -DOSCAR_ENGINE_ONLY=ON -DOSCAR_BUILD_BENCH=OFF -DOSCAR_HOST_TOOLS_DIR="$PWD/build/bin" "${LAUNCHER[@]}"
fi
cmake --build build-arm64 -j "$JOBS" --target $(bash scripts/test-arm64.sh --list-targets)
