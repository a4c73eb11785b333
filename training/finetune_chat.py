#!/usr/bin/env python3
"""Fine-tunes oscar-tiny (loaded from its GGUF) on ChatML conversations so
that it answers in turn and ends each answer with <|im_end|>.

  python3 training/finetune_chat.py --base BASE.gguf --work WORK --out RUN_DIR

WORK holds chat_train.jsonl (training/prepare_chat_data.py) and train.txt
(training/prepare_data.py). Each step trains on --batch rows of --row
tokens: conversations packed whole into rows (each starting with
<|endoftext|>, the BOS the engine adds), loss on the assistant tokens only
(answer text and its <|im_end|>); and --plain-rows of them plain training
text with loss on every token, so the model keeps its language modelling of
the documentation (held-out perplexity). Deterministic: one seed, a fixed
thread count and a fixed number of steps (no time limit). Writes RUN_DIR
(checkpoint_io format) and RUN_DIR/tokenizer.json for export_gguf.py.
"""
import argparse
import contextlib
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkpoint_io  # noqa: E402
import gguf_model  # noqa: E402
import tokenizer_from_gguf  # noqa: E402

EOT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"


def encode_conversation(tk, messages):
    """(ids, mask): ChatML as the template renders it, BOS first; mask 1
    on the tokens the model must learn to produce (assistant content and
    the <|im_end|> that closes it)."""
    sp = tk.special
    ids, mask = [sp[EOT]], [0]
    for m in messages:
        head = [sp[IM_START]] + tk.encode(m["role"] + "\n")
        body = tk.encode(m["content"]) + [sp[IM_END]]
        tail = tk.encode("\n")
        learn = 1 if m["role"] == "assistant" else 0
        ids += head + body + tail
        mask += [0] * len(head) + [learn] * len(body) + [0] * len(tail)
    return ids, mask


def pack_rows(convs, row, pad):
    """Conversations packed whole, in order, into rows of row+1 tokens
    (input and shifted target); the rest of a row is masked padding."""
    rows, cur_ids, cur_mask = [], [], []
    for ids, mask in convs:
        if len(ids) > row + 1:
            continue
        if len(cur_ids) + len(ids) > row + 1:
            n = row + 1 - len(cur_ids)
            rows.append((cur_ids + [pad] * n, cur_mask + [0] * n))
            cur_ids, cur_mask = [], []
        cur_ids += ids
        cur_mask += mask
    return rows


def plain_windows(tk, train_txt, n_tokens, row, rng):
    """Windows of plain training text (BOS + row tokens) from whole
    training pages chosen by the seeded generator."""
    with open(train_txt, encoding="utf-8") as f:
        docs = [d.strip("\n") for d in f.read().split(EOT)]
    docs = [d for d in docs if d]
    rng.shuffle(docs)
    ids = []
    for d in docs:
        ids += tk.encode(d) + [tk.special[EOT]]
        if len(ids) >= n_tokens:
            break
    bos = tk.special[EOT]
    return [[bos] + ids[s:s + row] for s in range(0, len(ids) - row, row)]


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    p = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the base model GGUF")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=600, help="steps of the learning-rate schedule")
    ap.add_argument("--stop-at", type=int, default=0,
                    help="stop after this many steps of the --steps schedule (a fixed count, not a time limit)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--plain-rows", type=int, default=2, help="rows of plain text in each batch")
    ap.add_argument("--row", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=47)
    ap.add_argument("--end-weight", type=float, default=1.0, help="loss weight of the <|im_end|> targets")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpu-bf16", action="store_true", help="bf16 autocast on the CPU")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--save-every", type=int, default=0,
                    help="also save OUT/step-N checkpoints on the way (they do not change the run)")
    return ap.parse_args()


def main():
    args = parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    tk = tokenizer_from_gguf.load(args.base)
    model, _ = gguf_model.load(args.base, dtype=torch.float32)
    model.train()
    cfg = model.cfg
    pad = tk.special[EOT]

    t0 = time.time()
    with open(os.path.join(args.work, "chat_train.jsonl"), encoding="utf-8") as f:
        convs = [encode_conversation(tk, json.loads(line)["messages"]) for line in f]
    chat_rows = pack_rows(convs, args.row, pad)
    n_chat = args.batch - args.plain_rows
    plain = plain_windows(tk, os.path.join(args.work, "train.txt"),
                          args.steps * args.plain_rows * args.row + args.row, args.row, rng)
    print(f"{len(convs)} conversations in {len(chat_rows)} rows of {args.row}; "
          f"{len(plain)} plain windows; data {time.time() - t0:.0f}s; "
          f"chat epochs {args.steps * n_chat / max(1, len(chat_rows)):.2f}; torch {torch.__version__}", flush=True)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if args.cpu_bf16 else contextlib.nullcontext()
    order = list(range(len(chat_rows)))
    rng.shuffle(order)
    chat_pos, plain_pos = 0, 0
    os.makedirs(args.out, exist_ok=True)
    print("step\tlr\tchat_loss\tplain_loss\telapsed_s\ttok_per_s", flush=True)
    t_start = last = time.time()
    for step in range(args.stop_at or args.steps):
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        rows, masks = [], []
        for _ in range(n_chat):
            if chat_pos == len(order):
                rng.shuffle(order)
                chat_pos = 0
            ids, mask = chat_rows[order[chat_pos]]
            chat_pos += 1
            rows.append(ids)
            masks.append(mask)
        for _ in range(args.plain_rows):
            rows.append(plain[plain_pos % len(plain)])
            masks.append([1] * (args.row + 1))
            plain_pos += 1
        x = torch.tensor(rows)
        m = torch.tensor(masks, dtype=torch.float32)[:, 1:]
        with amp:
            logits = model(x[:, :-1])
        tok_loss = F.cross_entropy(logits.float().reshape(-1, cfg.n_vocab), x[:, 1:].reshape(-1),
                                   reduction="none").view(len(rows), -1)
        if args.end_weight != 1.0:
            # Ending the turn is the behaviour this fine-tune is for: weigh
            # the <|im_end|> targets more than the answer text.
            w = torch.where(x[:, 1:] == tk.special[IM_END], args.end_weight, 1.0) * m
            loss = (tok_loss * w).sum() / w.sum()
        else:
            loss = (tok_loss * m).sum() / m.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % args.log_every == 0 or step == args.steps - 1 or step + 1 == args.stop_at:
            with torch.no_grad():
                cl = (tok_loss[:n_chat] * m[:n_chat]).sum() / m[:n_chat].sum()
                pl = tok_loss[n_chat:].mean() if args.plain_rows else torch.tensor(float("nan"))
            now = time.time()
            n = args.log_every if step else 1
            print(f"{step}\t{lr:.2e}\t{cl.item():.4f}\t{pl.item():.4f}\t{now - t_start:.0f}\t"
                  f"{n * len(rows) * args.row / max(1e-9, now - last):.0f}", flush=True)
            last = now
        if args.save_every and step % args.save_every == args.save_every - 1 and step != args.steps - 1:
            snap = os.path.join(args.out, f"step-{step + 1}")
            os.makedirs(snap, exist_ok=True)
            checkpoint_io.save(model, cfg, snap)
    checkpoint_io.save(model, cfg, args.out)
    tokenizer_from_gguf.write_json(args.base, os.path.join(args.out, "tokenizer.json"))
    print(f"done in {time.time() - t_start:.0f}s; checkpoint in {args.out}", flush=True)


if __name__ == "__main__":
    main()
