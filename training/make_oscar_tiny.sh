#!/bin/sh
# Reproduces models/oscar-tiny from scratch: text from Debian's documentation
# packages, the byte-level BPE, the model, the GGUF. Stages are cached in
# WORK. The committed model was trained with exactly these settings on one
# GPU (about 2 minutes); on CPU the same command runs, much longer (see
# models/oscar-tiny/README.md). Needs: python3 with torch >= 1.13 and numpy.
#
#   apt-get install -y debian-handbook python3.11-doc linux-doc-6.1
#   sh training/make_oscar_tiny.sh [WORK] [OUT.gguf]
set -eu
HERE=$(dirname "$0")
WORK=${1:-/tmp/oscar-tiny}
OUT=${2:-$HERE/../models/oscar-tiny/oscar-tiny-f16.gguf}
PY=${PYTHON:-python3}
"$PY" "$HERE/train.py" all --work "$WORK" --vocab 8192 --steps 3000 --seed 1 --batch 32 --ctx 1024 \
  --lr 2e-3 --warmup 200 --dropout 0.1 --bos-first \
  --n-embd 384 --n-layer 6 --n-head 8 --n-head-kv 2 --head-dim 64 --n-ff 1024
"$PY" "$HERE/export_gguf.py" --ckpt "$WORK/run" --tokenizer "$WORK/tokenizer.json" --add-bos --out "$OUT"
