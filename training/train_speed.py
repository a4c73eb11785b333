#!/usr/bin/env python3
"""Training tokens/s of train.py's model on random tokens, for choosing CPU
settings (bench/RESULTS.md, session 8). Each argument is one configuration
as keyword arguments; the first step is a warm-up, the next `steps` are timed.

  python3 training/train_speed.py "T=1024,B=4" "T=1024,B=4,bf16=True" "T=256,B=16,bf16=True"

Keys: e (n_embd), ff, V (vocab), T (context), B (batch), nl (layers), nh,
nkv (heads), steps, bf16, threads. Set the MALLOC_* variables of
make_oscar_tiny.sh in the environment to measure with them.
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Qwen3  # noqa: E402


def run(e=384, ff=1024, V=8192, T=1024, B=4, nl=6, nh=8, nkv=2, steps=3, bf16=False, threads=2):
    torch.set_num_threads(threads)
    cfg = Config(n_vocab=V, n_embd=e, n_layer=nl, n_head=nh, n_head_kv=nkv, head_dim=64, n_ff=ff, n_ctx=T)
    m = Qwen3(cfg)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    x = torch.randint(0, V, (B, T + 1))
    times = []
    for _ in range(steps + 1):
        t0 = time.time()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = m(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, V), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.time() - t0)
    dt = sum(times[1:]) / steps
    print(f"e{e} ff{ff} V{V} T{T} B{B} layers {nl} heads {nh}/{nkv} bf16={bf16}: {B * T / dt:.0f} tokens/s", flush=True)


def main():
    for a in sys.argv[1:] or ["T=1024,B=4"]:
        kw = {}
        for item in a.split(","):
            k, v = item.split("=")
            kw[k] = v == "True" if v in ("True", "False") else int(v)
        run(**kw)


if __name__ == "__main__":
    main()
