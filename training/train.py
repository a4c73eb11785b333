#!/usr/bin/env python3
"""Trains the oscar-tiny model: data -> byte-level BPE -> qwen3 model.

training/make_oscar_tiny.sh holds the exact command of the committed model.
Stages are cached in --work: `prepare` (text, tokenizer, token ids; CPU),
`fit` (the model; torch >= 1.13 on CPU or CUDA), or `all`. The log (TSV)
records loss, held-out loss and tokens per second.
"""
import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
from model import Config, Qwen3  # noqa: E402
import checkpoint_io  # noqa: E402

EOT = "<|endoftext|>"


def log_line(path, msg):
    print(msg, flush=True)
    if path:
        with open(path, "a") as f:
            f.write(msg + "\n")


def prepare(args):
    work = args.work
    if not os.path.exists(os.path.join(work, "train.txt")):
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "prepare_data.py"),
                        "--out", work], check=True)
    tok_path = os.path.join(work, "tokenizer.json")
    with open(os.path.join(work, "train.txt"), encoding="utf-8") as f:
        docs = [d.strip("\n") for d in f.read().split(EOT)]
    docs = [d for d in docs if d]
    if not os.path.exists(tok_path):
        t0 = time.time()
        tokens, merges = bpe.train_bpe(docs, args.vocab)
        with open(tok_path, "w") as f:
            json.dump({"tokens": tokens, "merges": [list(m) for m in merges]}, f)
        print(f"bpe: {len(tokens)} tokens in {time.time() - t0:.1f}s", flush=True)
    tk = load_tokenizer(work)
    for name, texts in (("train", docs), ("heldout", None)):
        out = os.path.join(work, name + ".bin")
        if os.path.exists(out):
            continue
        if texts is None:
            with open(os.path.join(work, "heldout.txt"), encoding="utf-8") as f:
                texts = [f.read()]
        ids = []
        for d in texts:
            ids += tk.encode(d)
            ids.append(tk.special[EOT])
        torch.tensor(ids, dtype=torch.int16 if len(tk.tokens) < 32768 else torch.int32).numpy().tofile(out)
        print(f"{name}: {len(ids)} tokens", flush=True)


def load_tokenizer(work):
    with open(os.path.join(work, "tokenizer.json")) as f:
        t = json.load(f)
    return bpe.Tokenizer(t["tokens"], [tuple(m) for m in t["merges"]])


def load_ids(path):
    import numpy as np
    return torch.from_numpy(np.fromfile(path, dtype=np.int16).astype(np.int64))


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    p = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def fit(args):
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    if dev.type == "cpu":
        torch.set_num_threads(args.threads)
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
    train = load_ids(os.path.join(args.work, "train.bin"))
    held = load_ids(os.path.join(args.work, "heldout.bin"))
    n_vocab = len(load_tokenizer(args.work).tokens)
    cfg = Config(n_vocab=n_vocab, n_embd=args.n_embd, n_layer=args.n_layer, n_head=args.n_head,
                 n_head_kv=args.n_head_kv, head_dim=args.head_dim, n_ff=args.n_ff, n_ctx=args.ctx,
                 dropout=args.dropout)
    model = Qwen3(cfg).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    os.makedirs(args.out, exist_ok=True)
    logp = os.path.join(args.out, "train_log.tsv")
    if os.path.exists(logp):
        os.remove(logp)
    log_line(None, f"config {json.dumps(cfg.to_dict())} params {n_params} train_tokens {len(train)} "
             f"heldout_tokens {len(held)} device {dev} torch {torch.__version__}")
    log_line(logp, "step\ttokens\tlr\ttrain_loss\tval_loss\telapsed_s\ttok_per_s")
    gen = torch.Generator().manual_seed(args.seed)
    T, B = args.ctx, args.batch
    # Fixed validation windows: the same held-out tokens at every evaluation.
    # With --bos-first every window starts with <|endoftext|> (the GGUF then
    # asks for a BOS), the way BOS-prefixed LLMs are trained; that fixed
    # first token is where attention sinks form.
    tok = load_tokenizer(args.work)
    bos = torch.tensor([tok.special[EOT]]) if args.bos_first else torch.zeros(0, dtype=torch.long)
    body = T + 1 - len(bos)

    def window(ids, s, length=body):
        return torch.cat([bos, ids[s:s + length]])

    nval = min(args.val_windows, (len(held) - 1) // body)
    val = torch.stack([window(held, i * body) for i in range(nval)]).to(dev)
    amp = dev.type == "cuda" or args.cpu_bf16

    def autocast():
        # bf16 matmuls on the GPU, and on CPUs with bf16 dot products when
        # asked (about 1.8x the float32 speed on AVX512-BF16); float32 otherwise.
        if amp:
            return torch.autocast(dev.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def evaluate():
        model.eval()
        tot = 0.0
        with torch.no_grad():
            for i in range(0, nval, B):
                x = val[i:i + B]
                with autocast():
                    logits = model(x[:, :-1])
                tot += F.cross_entropy(logits.float().reshape(-1, n_vocab), x[:, 1:].reshape(-1),
                                       reduction="sum").item()
        model.train()
        return tot / (nval * T)

    t_start = time.time()
    last_t, last_tok, seen = t_start, 0, 0
    best = (float("inf"), -1, None)
    # Short-context phase (--short-ctx): the first steps train on windows of
    # short_ctx tokens, as many per step as keeps the tokens per step the
    # same. Attention then costs a fraction, which on a CPU buys more tokens
    # in the same time; the last steps train at the full context.
    n_short = int(args.steps * args.short_frac) if args.short_ctx else 0
    for step in range(args.steps):
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        short = step < n_short
        length = args.short_ctx + 1 - len(bos) if short else body
        count = B * T // args.short_ctx if short else B
        starts = torch.randint(0, len(train) - length, (count,), generator=gen)
        x = torch.stack([window(train, s, length) for s in starts.tolist()]).to(dev, non_blocking=True)
        with autocast():
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, n_vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen += B * T
        if step % args.log_every == 0 or step == args.steps - 1:
            lv = loss.item()
            val_loss = evaluate() if (step % args.eval_every == 0 or step == args.steps - 1) else float("nan")
            if val_loss == val_loss and val_loss < best[0]:
                # Early stopping on the held-out loss: the saved model is the
                # best evaluated one (the corpus is small enough to overfit).
                best = (val_loss, step, {k: v.detach().clone() for k, v in model.state_dict().items()})
            now = time.time()
            tps = (seen - last_tok) / max(1e-9, now - last_t)
            last_t, last_tok = now, seen
            log_line(logp, f"{step}\t{seen}\t{lr:.3e}\t{lv:.4f}\t{val_loss:.4f}\t{now - t_start:.1f}\t{tps:.0f}")
        if args.max_seconds and time.time() - t_start > args.max_seconds:
            log_line(logp, f"# stopped by --max-seconds at step {step}")
            break
    model.load_state_dict(best[2])
    checkpoint_io.save(model, cfg, args.out)
    log_line(logp, f"# saved step {best[1]} (val_loss {best[0]:.4f})")
    log_line(None, f"done in {time.time() - t_start:.1f}s; checkpoint in {args.out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", nargs="?", default="all", choices=["prepare", "fit", "all"])
    ap.add_argument("--work", required=True, help="data, tokenizer and token ids")
    ap.add_argument("--out", help="checkpoint and log (default: WORK/run)")
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--n-embd", type=int, default=384)
    ap.add_argument("--n-layer", type=int, default=6)
    ap.add_argument("--n-head", type=int, default=8)
    ap.add_argument("--n-head-kv", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--n-ff", type=int, default=1024)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--bos-first", action="store_true", help="start every window with <|endoftext|>")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--val-windows", type=int, default=64)
    ap.add_argument("--max-seconds", type=float, default=0)
    ap.add_argument("--cpu-bf16", action="store_true", help="bf16 autocast on the CPU")
    ap.add_argument("--short-ctx", type=int, default=0, help="context of the short-context phase")
    ap.add_argument("--short-frac", type=float, default=0.0, help="share of steps in the short-context phase")
    args = ap.parse_args()
    args.out = args.out or os.path.join(args.work, "run")
    if args.stage in ("prepare", "all"):
        prepare(args)
    if args.stage in ("fit", "all"):
        fit(args)


if __name__ == "__main__":
    main()
