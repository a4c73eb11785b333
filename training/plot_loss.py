#!/usr/bin/env python3
"""Draws the training log (train_log.tsv) as a PNG: training loss at every
logged step and held-out loss at every evaluation. Needs matplotlib
(apt-get install -y python3-matplotlib), which only this step uses.

  python3 training/plot_loss.py models/oscar-tiny/train_log.tsv models/oscar-tiny/loss.png
"""
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = sys.argv[1:3]
    steps, train, vsteps, val = [], [], [], []  # x: tokens seen
    with open(src) as f:
        next(f)
        for line in f:
            if line.startswith("#"):
                continue
            _, tokens, _, tl, vl = line.split("\t")[:5]
            mtok = int(tokens) / 1e6
            steps.append(mtok)
            train.append(float(tl))
            if not math.isnan(float(vl)):
                vsteps.append(mtok)
                val.append(float(vl))
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot(steps, train, lw=0.8, label="training loss (batch)")
    ax.plot(vsteps, val, "o-", ms=3, label="held-out loss")
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_ylim(1.5, 9.5)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("oscar-tiny training")
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
