#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install dependencies, build, and
# run the main job. Until oscar-server exists the main job is: write a small
# model and inspect it (later: generate with it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
bash scripts/build.sh
if [ -x build/bin/oscar-mkmodel ]; then
  build/bin/oscar-mkmodel --arch qwen3 --preset tiny --type q8_0 -o build/tiny-qwen3.gguf
  build/bin/oscar-gguf info build/tiny-qwen3.gguf
  build/bin/oscar-gguf verify build/tiny-qwen3.gguf
else
  echo "oscar-mkmodel is not built yet"
fi
