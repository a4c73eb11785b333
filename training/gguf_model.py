"""Loads a qwen3 GGUF (F16/F32) into the training script's PyTorch model,
through the project's independent GGUF reader (tests/reference/gguf_min.py),
so what is compared is exactly what the engine reads."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
from model import Config, Qwen3  # noqa: E402
import gguf_min  # noqa: E402

TORCH_NAMES = {
    "attn_norm.weight": "attn_norm.weight", "attn_q.weight": "wq.weight",
    "attn_k.weight": "wk.weight", "attn_v.weight": "wv.weight", "attn_output.weight": "wo.weight",
    "attn_q_norm.weight": "q_norm.weight", "attn_k_norm.weight": "k_norm.weight",
    "ffn_norm.weight": "ffn_norm.weight", "ffn_gate.weight": "ffn_gate.weight",
    "ffn_up.weight": "ffn_up.weight", "ffn_down.weight": "ffn_down.weight",
}


def load(path, dtype=torch.float64):
    g = gguf_min.Gguf(path)
    m = g.meta
    if m.get("general.architecture") != "qwen3":
        raise ValueError(f"{path}: not a qwen3 model")
    a = "qwen3."
    cfg = Config(n_vocab=len(m["tokenizer.ggml.tokens"]), n_embd=m[a + "embedding_length"],
                 n_layer=m[a + "block_count"], n_head=m[a + "attention.head_count"],
                 n_head_kv=m[a + "attention.head_count_kv"], head_dim=m[a + "attention.key_length"],
                 n_ff=m[a + "feed_forward_length"], n_ctx=m[a + "context_length"],
                 rope_theta=m[a + "rope.freq_base"], rms_eps=m[a + "attention.layer_norm_rms_epsilon"])
    model = Qwen3(cfg)
    state = {}
    for name, arr in g.tensors.items():
        if name.endswith("_rot.weight"):
            # OSCAR rotations (a rot-kv file) act on the KV cache only: an
            # orthogonal change of basis that leaves the model's function as is.
            continue
        if name == "token_embd.weight":
            key = "tok_embd.weight"
        elif name == "output_norm.weight":
            key = name
        else:
            _, i, rest = name.split(".", 2)
            key = f"blocks.{i}.{TORCH_NAMES[rest]}"
        state[key] = torch.from_numpy(arr.copy())
    model.load_state_dict(state, strict=True)
    return model.to(dtype).eval(), m
