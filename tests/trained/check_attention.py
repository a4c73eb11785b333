"""training/model.py's blocked causal attention (the CPU training path)
against causal softmax attention written here in NumPy float64: GQA ratios
1, 4 and 8, lengths below, at and across the 128-query blocks. Exit status 0
when the largest error is within 1e-5 of the largest |output|."""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "training"))
from model import causal_attention_blocked  # noqa: E402


def reference(q, k, v):
    B, Hq, T, D = q.shape
    rep = Hq // k.shape[1]
    out = np.zeros((B, Hq, T, D))
    for h in range(Hq):
        s = q[:, h] @ k[:, h // rep].transpose(0, 2, 1) / np.sqrt(D)  # (B, T, T)
        s = s + np.triu(np.full((T, T), -np.inf), 1)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, h] = (p / p.sum(-1, keepdims=True)) @ v[:, h // rep]
    return out


def main():
    rng = np.random.default_rng(3)
    worst = 0.0
    for hq, hkv in ((2, 2), (8, 2), (8, 1)):
        for T in (1, 100, 128, 300):
            q, k, v = (rng.standard_normal((2, h, T, 64)) for h in (hq, hkv, hkv))
            q[..., 5] *= 8.0  # a dominant channel: peaked softmax rows
            mask = torch.full((T, T), float("-inf")).triu(1)
            got = causal_attention_blocked(*(torch.tensor(x, dtype=torch.float32) for x in (q, k, v)), mask)
            want = reference(q, k, v)
            err = np.abs(got.double().numpy() - want).max() / np.abs(want).max()
            worst = max(worst, err)
            print(f"heads {hq}/{hkv} T {T}: max relative error {err:.2e}")
    print("OK" if worst <= 1e-5 else "FAIL")
    sys.exit(0 if worst <= 1e-5 else 1)


if __name__ == "__main__":
    main()
