#!/usr/bin/env python3
"""Measures a chat model with the engine (build/bin/oscar-cli) on held-out
questions (training/prepare_chat_data.py's chat_heldout.jsonl):

  python3 training/eval_chat.py --model M.gguf --questions Q.jsonl replies [--temp 0] [oscar-cli flags...]
      share of replies that end with <|im_end|> within --budget tokens, mean reply length
  python3 training/eval_chat.py --model M.gguf --questions Q.jsonl answer-ppl
      perplexity of the reference answers (and their <|im_end|>) after the question

Each question is one single-turn ChatML prompt, rendered as the model's
template renders it (BOS, <|im_start|>user ... <|im_end|>, the assistant
header), run through `oscar-cli -no-cnv` so the engine tokenizes the special
tokens itself. oscar-cli counts the end-of-generation token it samples in
"generation: N tokens"; with -n budget+1 a reply ended on its own exactly
when N <= budget.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chat_prompt(question):
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def load_questions(path, limit):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:limit] if limit else rows


def run_cli(args, prompt, extra):
    cmd = [args.cli, "-m", args.model, "-p", prompt, "-t", str(args.threads), "-c", "1024"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return p


def replies(args, rest):
    qs = load_questions(args.questions, args.limit)
    ended, lengths, samples = 0, [], []
    for i, q in enumerate(qs):
        extra = ["-n", str(args.budget + 1), "--temp", str(args.temp), "-s", str(args.seed + i)] + rest
        p = run_cli(args, chat_prompt(q["question"]), extra)
        n = int(re.search(r"generation: (\d+) tokens", p.stderr).group(1))
        ok = n <= args.budget
        ended += ok
        lengths.append(n - 1 if ok else n)
        samples.append({"question": q["question"], "reply": p.stdout[len(chat_prompt(q["question"])):].rstrip("\n"),
                        "ended": ok, "tokens": lengths[-1]})
    if args.samples:
        with open(args.samples, "w", encoding="utf-8") as f:
            for s in samples:
                f.write(json.dumps(s, ensure_ascii=False) + "\n")
    print(f"ended {ended}/{len(qs)} ({100.0 * ended / len(qs):.1f}%) within {args.budget} tokens; "
          f"mean reply {sum(lengths) / len(lengths):.1f} tokens; "
          f"mean of the ended {sum(l for l, s in zip(lengths, samples) if s['ended']) / max(1, ended):.1f}")


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def answer_ppl(args, rest):
    """exp(mean NLL) of the answer tokens and the closing <|im_end|>, each
    scored from the logits of the position before it."""
    qs = load_questions(args.questions, args.limit)
    nll, count = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "logits.bin")
        for q in qs:
            prompt = chat_prompt(q["question"])
            full = prompt + q["answer"] + "<|im_end|>"
            # The prompt's own length in tokens: dump it alone first.
            run_cli(args, prompt, ["-n", "0", "--dump-logits", dump] + rest)
            n_prompt = int(np.fromfile(dump, dtype=np.int32, count=1)[0])
            run_cli(args, full, ["-n", "0", "--dump-logits", dump] + rest)
            head = np.fromfile(dump, dtype=np.int32, count=2)
            n, v = int(head[0]), int(head[1])
            ids = np.fromfile(dump, dtype=np.int32, count=2 + n)[2:]
            logits = np.fromfile(dump, dtype=np.float32, offset=4 * (2 + n)).reshape(n, v)
            lp = log_softmax(logits[n_prompt - 1:n - 1])
            tgt = ids[n_prompt:]
            nll -= float(lp[np.arange(len(tgt)), tgt].sum())
            count += len(tgt)
    print(f"answer perplexity {math.exp(nll / count):.2f} over {count} tokens of {len(qs)} answers")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["replies", "answer-ppl"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "oscar-cli"))
    ap.add_argument("--budget", type=int, default=256)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1, help="sampling seed of question i is seed + i")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--samples", help="write each question, reply and length here (JSONL)")
    args, rest = ap.parse_known_args()
    (replies if args.mode == "replies" else answer_ppl)(args, rest)


if __name__ == "__main__":
    main()
