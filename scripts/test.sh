#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# --arm64: the cross toolchain and QEMU for the ARM64 step below.
bash scripts/setup-deps.sh --arm64
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The engine cross-built for ARM64 and its kernel, attention and forward-pass
# tests under QEMU (about 5 minutes on 2 cores: the cross build 2, the tests
# 3; OSCAR_SKIP_ARM64=1 skips it).
if [ "${OSCAR_SKIP_ARM64:-0}" != 1 ]; then
  bash scripts/build-arm64.sh
  bash scripts/test-arm64.sh
fi
# ASan + UBSan build of the server tests, then every fuzzer for 20 s
# (about 15 minutes on 2 cores; OSCAR_SKIP_SANITIZE=1 skips it).
if [ "${OSCAR_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize-and-fuzz.sh
fi
