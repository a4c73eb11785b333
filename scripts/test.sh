#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# ASan + UBSan build of the server tests, then every fuzzer for 20 s
# (about 15 minutes on 2 cores; OSCAR_SKIP_SANITIZE=1 skips it).
if [ "${OSCAR_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize-and-fuzz.sh
fi
