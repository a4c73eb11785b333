#!/usr/bin/env python3
"""Held-out perplexity of a unigram model (training token frequencies,
add-one smoothed): the baseline the trained model's perplexity is judged
against. Reads WORK/train.bin and WORK/heldout.bin from `train.py prepare`.

  python3 training/unigram_baseline.py --work /tmp/oscar-tiny
"""
import argparse
import math
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--vocab", type=int, default=8192)
    args = ap.parse_args()
    train = np.fromfile(os.path.join(args.work, "train.bin"), dtype=np.int16).astype(np.int64)
    held = np.fromfile(os.path.join(args.work, "heldout.bin"), dtype=np.int16).astype(np.int64)
    counts = np.bincount(train, minlength=args.vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    nll = -logp[held].mean()
    print(f"unigram: {len(held)} held-out tokens, {nll:.4f} nats/token, perplexity {math.exp(nll):.1f}")


if __name__ == "__main__":
    main()
