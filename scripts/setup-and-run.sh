#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install dependencies, build, and
# run the main job. Until oscar-server exists the main job is: write a small
# model and inspect it (later: generate with it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
bash scripts/build.sh
# A random-weight qwen3 of real architecture (prints gibberish by design),
# with the OSCAR 2-bit KV cache and data-free Hadamard rotations.
build/bin/oscar-mkmodel --arch qwen3 --preset tiny --type q8_0 -o build/tiny-qwen3.gguf
build/bin/oscar-gguf verify build/tiny-qwen3.gguf
build/bin/oscar-cli -m build/tiny-qwen3.gguf -p "Hello, world" -n 32 --seed 1 \
  -ctk q2_0 -ctv q2_0 --kv-hp-sink 4 --kv-hp-recent 8
# A really trained model, when the shared test data is next to the checkout.
if [ -f ../shared/data/models/stories260K.gguf ]; then
  build/bin/oscar-cli -m ../shared/data/models/stories260K.gguf -n 64 --temp 0
fi
