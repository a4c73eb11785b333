#!/usr/bin/env python3
"""Writes a trained checkpoint and its tokenizer as a qwen3 GGUF (F16
matrices, F32 norms) with a gpt2-style byte-level BPE tokenizer and a
ChatML chat template.

  python3 training/export_gguf.py --ckpt WORK/run --tokenizer WORK/tokenizer.json \\
      --out models/oscar-tiny/oscar-tiny-f16.gguf
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint_io  # noqa: E402
from bpe import SPECIAL_TOKENS  # noqa: E402
from gguf_writer import (GGML_F16, GGML_F32, T_BOOL, T_F32, T_I32, T_STR, T_U32,  # noqa: E402
                         GgufWriter)

# Minimal ChatML: each message between <|im_start|>role and <|im_end|>.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

# The chat model's: the same ChatML with the BOS first. It was fine-tuned
# on conversations that start with <|endoftext|>, as every training window
# of the base model did, and chat front ends (oscar-cli, the server)
# tokenize the rendered template without adding a BOS of their own.
CHAT_TEMPLATE_WITH_BOS = "{{- bos_token -}}" + CHAT_TEMPLATE

TOKEN_NORMAL, TOKEN_CONTROL = 1, 3

# Our PyTorch names -> the GGUF names llama.cpp's qwen3 loader (and ours) use.
LAYER_NAMES = {
    "attn_norm.weight": "attn_norm.weight", "wq.weight": "attn_q.weight",
    "wk.weight": "attn_k.weight", "wv.weight": "attn_v.weight", "wo.weight": "attn_output.weight",
    "q_norm.weight": "attn_q_norm.weight", "k_norm.weight": "attn_k_norm.weight",
    "ffn_norm.weight": "ffn_norm.weight", "ffn_gate.weight": "ffn_gate.weight",
    "ffn_up.weight": "ffn_up.weight", "ffn_down.weight": "ffn_down.weight",
}


def gguf_name(key):
    if key == "tok_embd.weight":
        return "token_embd.weight"
    if key == "output_norm.weight":
        return "output_norm.weight"
    parts = key.split(".", 2)
    if parts[0] == "blocks" and parts[2] in LAYER_NAMES:
        return f"blk.{parts[1]}.{LAYER_NAMES[parts[2]]}"
    raise KeyError(f"no GGUF name for {key}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="oscar-tiny")
    ap.add_argument("--license", default="GPL-2.0-only")
    ap.add_argument("--add-bos", action="store_true",
                    help="the model was trained with --bos-first: the engine prepends <|endoftext|>")
    ap.add_argument("--template-bos", action="store_true",
                    help="the chat template renders the BOS first (models fine-tuned on BOS-first conversations)")
    args = ap.parse_args()
    cfg, state = checkpoint_io.load(args.ckpt)
    with open(args.tokenizer) as f:
        tok = json.load(f)
    tokens, merges = tok["tokens"], tok["merges"]
    if len(tokens) != cfg["n_vocab"]:
        sys.exit(f"tokenizer has {len(tokens)} tokens, model {cfg['n_vocab']}")
    ids = {t: i for i, t in enumerate(tokens)}

    w = GgufWriter()
    a = "qwen3."
    w.add("general.architecture", T_STR, "qwen3")
    w.add("general.name", T_STR, args.name)
    w.add("general.license", T_STR, args.license)
    w.add("general.file_type", T_U32, 1)  # mostly F16
    w.add(a + "context_length", T_U32, cfg["n_ctx"])
    w.add(a + "embedding_length", T_U32, cfg["n_embd"])
    w.add(a + "block_count", T_U32, cfg["n_layer"])
    w.add(a + "feed_forward_length", T_U32, cfg["n_ff"])
    w.add(a + "attention.head_count", T_U32, cfg["n_head"])
    w.add(a + "attention.head_count_kv", T_U32, cfg["n_head_kv"])
    w.add(a + "attention.key_length", T_U32, cfg["head_dim"])
    w.add(a + "attention.value_length", T_U32, cfg["head_dim"])
    w.add(a + "attention.layer_norm_rms_epsilon", T_F32, cfg["rms_eps"])
    w.add(a + "rope.freq_base", T_F32, cfg["rope_theta"])
    w.add(a + "vocab_size", T_U32, cfg["n_vocab"])
    w.add("tokenizer.ggml.model", T_STR, "gpt2")
    w.add("tokenizer.ggml.pre", T_STR, "gpt-2")
    w.add_array("tokenizer.ggml.tokens", T_STR, tokens)
    w.add_array("tokenizer.ggml.token_type", T_I32,
                [TOKEN_CONTROL if t in SPECIAL_TOKENS else TOKEN_NORMAL for t in tokens])
    w.add_array("tokenizer.ggml.merges", T_STR, [f"{x} {y}" for x, y in merges])
    w.add("tokenizer.ggml.bos_token_id", T_U32, ids["<|endoftext|>"])
    w.add("tokenizer.ggml.eos_token_id", T_U32, ids["<|endoftext|>"])
    w.add("tokenizer.ggml.eot_token_id", T_U32, ids["<|im_end|>"])
    w.add("tokenizer.ggml.padding_token_id", T_U32, ids["<|endoftext|>"])
    w.add("tokenizer.ggml.add_bos_token", T_BOOL, args.add_bos)
    w.add("tokenizer.chat_template", T_STR, CHAT_TEMPLATE_WITH_BOS if args.template_bos else CHAT_TEMPLATE)
    for key in sorted(state, key=lambda k: (k != "tok_embd.weight", k.startswith("output"), k)):
        t = state[key].numpy()
        w.add_tensor(gguf_name(key), t, GGML_F16 if t.ndim == 2 else GGML_F32)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    w.write(args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
