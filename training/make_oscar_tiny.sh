#!/bin/sh
# Reproduces models/oscar-tiny from scratch on a CPU: text from Debian's
# documentation packages, the byte-level BPE, the model, the GGUF. Stages
# are cached in WORK. The committed model was made by exactly this command on
# the 2-core development machine: about 4 minutes of data preparation and
# about 2 hours of training (models/oscar-tiny/README.md).
#
#   apt-get install -y debian-handbook python3.11-doc linux-doc-6.1 \
#       python3-torch python3-numpy libopenblas0-openmp
#   sh training/make_oscar_tiny.sh [WORK] [OUT.gguf]
#
# --cpu-bf16 needs a CPU with bf16 dot products (AVX512-BF16 or AMX) to be
# fast; elsewhere drop it and expect about half the speed. With a GPU, set
# OSCAR_TINY_GPU=1 for the longer run the first oscar-tiny had (3000 steps of
# 32 x 1024 tokens, about 2 minutes on an H200).
set -eu
HERE=$(dirname "$0")
WORK=${1:-/tmp/oscar-tiny}
OUT=${2:-$HERE/../models/oscar-tiny/oscar-tiny-f16.gguf}
PY=${PYTHON:-python3}
# glibc would hand torch's large activation buffers back to the kernel after
# every step and fault them in again (over half the CPU time in the kernel on
# the development machine); keeping them in the heap trains about 1.3x faster.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-4294967296}
export MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-17179869184}
export MALLOC_TOP_PAD_=${MALLOC_TOP_PAD_:-1073741824}
SHAPE="--n-embd 384 --n-layer 6 --n-head 8 --n-head-kv 2 --head-dim 64 --n-ff 1024"
if [ "${OSCAR_TINY_GPU:-0}" = 1 ]; then
  "$PY" "$HERE/train.py" all --work "$WORK" --vocab 8192 --steps 3000 --seed 1 --batch 32 --ctx 1024 \
    --lr 2e-3 --warmup 200 --dropout 0.1 --bos-first $SHAPE
else
  # 1400 steps of 8 x 1024 tokens (11.5M tokens, about one epoch): the first 60%
  # as windows of 256 tokens, bf16 matmuls, and a time guard that keeps the
  # run inside the 3-hour budget on a slower machine.
  "$PY" "$HERE/train.py" all --work "$WORK" --vocab 8192 --steps 1400 --seed 1 --batch 8 --ctx 1024 \
    --lr 1.5e-3 --warmup 50 --bos-first --device cpu --threads 2 --cpu-bf16 \
    --short-ctx 256 --short-frac 0.6 --eval-every 50 --val-windows 32 --max-seconds 10000 $SHAPE
fi
"$PY" "$HERE/export_gguf.py" --ckpt "$WORK/run" --tokenizer "$WORK/tokenizer.json" --add-bos --out "$OUT"
