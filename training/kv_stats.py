#!/usr/bin/env python3
"""Per-layer statistics that decide how hard a 2-bit KV cache has it, measured
on held-out text with the model as shipped (the GGUF, run in PyTorch):

- K outlier ratio: per KV head, the mean |k| of each channel over tokens;
  the largest channel divided by the median channel (max over heads). Both
  post-RoPE (what the cache stores) and pre-RoPE (where KVQuant measures).
- First-token attention: the mean attention weight that queries at positions
  >= 16 give to position 0 (all heads), next to the 1/(t+1) a uniform head
  would give.
- Query effective rank: exp(entropy) of the normalised eigenvalues of each
  head's uncentred query covariance E[q q^T] (Roy & Vetterli), mean over
  heads, out of head_dim.

  python3 training/kv_stats.py models/oscar-tiny/oscar-tiny-f16.gguf \\
      models/oscar-tiny/heldout.txt --windows 8 > models/oscar-tiny/kv_stats.md
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import bpe  # noqa: E402
import gguf_model  # noqa: E402
from model import apply_rope, rope_tables  # noqa: E402


def outlier_ratio(k):
    # k: (B, H, T, D) -> max over heads of max/median channel mean |k|
    mag = k.abs().mean(dim=(0, 2))  # (H, D)
    return (mag.max(dim=1).values / mag.median(dim=1).values).max().item()


def effective_rank(q):
    # q: (B, H, T, D) -> mean over heads of exp(entropy of eigenvalue shares)
    B, H, T, D = q.shape
    x = q.permute(1, 0, 2, 3).reshape(H, B * T, D).double()
    cov = x.transpose(1, 2) @ x / x.shape[1]
    ev = torch.linalg.eigvalsh(cov).clamp_min(0)
    p = ev / ev.sum(dim=1, keepdim=True)
    ent = -(p * torch.log(p.clamp_min(1e-300))).sum(dim=1)
    return ent.exp().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=1024)
    args = ap.parse_args()
    torch.set_num_threads(2)
    model, meta = gguf_model.load(args.model, dtype=torch.float32)
    cfg = model.cfg
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    tk = bpe.Tokenizer(meta["tokenizer.ggml.tokens"], merges)
    with open(args.text, encoding="utf-8") as f:
        ids = tk.encode(f.read())
    T = args.ctx
    # Windows begin as the engine would begin them: with BOS when the
    # vocabulary asks for one.
    bos = [meta["tokenizer.ggml.bos_token_id"]] if meta.get("tokenizer.ggml.add_bos_token") else []
    body = T - len(bos)
    n = min(args.windows, len(ids) // body)
    x = torch.tensor([bos + ids[i * body:(i + 1) * body] for i in range(n)])
    cos, sin = rope_tables(cfg, T)
    acc = {}

    def probe(layer, q, k, att):
        # q, k post-RoPE with K repeated per query head; undo both for K.
        rep = cfg.n_head // cfg.n_head_kv
        k = k[:, ::rep]
        k_pre = apply_rope(k, cos, -sin)
        q_pre = apply_rope(q, cos, -sin)
        t = torch.arange(T)
        first = att[:, :, 16:, 0].mean().item()
        uniform = (1.0 / (t[16:] + 1).double()).mean().item()
        a = acc.setdefault(layer, [])
        a.append((outlier_ratio(k), outlier_ratio(k_pre), first, uniform,
                  effective_rank(q), effective_rank(q_pre)))

    with torch.no_grad():
        for i in range(n):  # one window at a time keeps the T x T maps small
            model(x[i:i + 1], probe=probe)
    print(f"Model: {os.path.basename(args.model)}; {n} held-out windows of {T} tokens "
          f"({'BOS first' if bos else 'no BOS'}); "
          f"head_dim {cfg.head_dim}, {cfg.n_head} query / {cfg.n_head_kv} KV heads.\n")
    print("| layer | K max/median channel (post-RoPE) | (pre-RoPE) | attention on token 0 "
          "| uniform would give | query eff. rank (post-RoPE) | (pre-RoPE) |")
    print("|---|---|---|---|---|---|---|")
    for layer in sorted(acc):
        v = [sum(c) / len(c) for c in zip(*acc[layer])]
        print(f"| {layer} | {v[0]:.1f} | {v[1]:.1f} | {v[2]:.3f} | {v[3]:.3f} | "
              f"{v[4]:.1f} / {cfg.head_dim} | {v[5]:.1f} / {cfg.head_dim} |")


if __name__ == "__main__":
    main()
