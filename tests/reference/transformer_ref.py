"""NumPy reference forward pass for llama, qwen2 and qwen3 GGUF models.

Written from the published architecture definitions (Hugging Face
modeling_llama / modeling_qwen2 / modeling_qwen3) in float64:
  h = embed[tokens]
  per layer: a = attn(rmsnorm(h)); h += a; h += mlp(rmsnorm(h))
  attn: q, k, v projections (+ bias for qwen2), per-head RMSNorm of q and k
  (qwen3), RoPE (llama GGUFs: adjacent pairs, because the converter permutes
  q/k rows; qwen: rotate halves), causal softmax(q k^T / sqrt(d)) v with GQA,
  output projection; mlp: down(silu(gate(x)) * up(x)).
Usage: transformer_ref.py MODEL.gguf OUT.bin TOKEN [TOKEN ...]
Writes float32 logits (n_tokens, n_vocab), little-endian, row-major.
"""
import sys

import numpy as np

from gguf_min import Gguf


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, base, neox):
    # x: (T, H, d)
    d = x.shape[-1]
    half = d // 2
    inv = base ** (-2.0 * np.arange(half) / d)
    ang = pos[:, None] * inv[None, :]  # (T, half)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    out = x.copy()
    if neox:
        x0, x1 = x[..., :half], x[..., half:]
        out[..., :half] = x0 * c - x1 * s
        out[..., half:] = x0 * s + x1 * c
    else:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
    return out


def forward(g, tokens):
    arch = g.meta["general.architecture"]
    p = arch + "."
    n_layer = g.meta[p + "block_count"]
    n_head = g.meta[p + "attention.head_count"]
    n_kv = g.meta[p + "attention.head_count_kv"]
    eps = g.meta[p + "attention.layer_norm_rms_epsilon"]
    base = g.meta.get(p + "rope.freq_base", 10000.0)
    t = g.tensors
    emb = t["token_embd.weight"]
    d = g.meta.get(p + "attention.key_length", emb.shape[1] // n_head)
    neox = arch in ("qwen2", "qwen3")
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    h = emb[np.array(tokens)]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(n_layer):
        b = "blk.%d." % i
        x = rms_norm(h, t[b + "attn_norm.weight"], eps)
        q = x @ t[b + "attn_q.weight"].T
        k = x @ t[b + "attn_k.weight"].T
        v = x @ t[b + "attn_v.weight"].T
        if b + "attn_q.bias" in t:
            q, k, v = q + t[b + "attn_q.bias"], k + t[b + "attn_k.bias"], v + t[b + "attn_v.bias"]
        q = q.reshape(T, n_head, d)
        k = k.reshape(T, n_kv, d)
        v = v.reshape(T, n_kv, d)
        if b + "attn_q_norm.weight" in t:
            q = rms_norm(q, t[b + "attn_q_norm.weight"], eps)
            k = rms_norm(k, t[b + "attn_k_norm.weight"], eps)
        q, k = rope(q, pos, base, neox), rope(k, pos, base, neox)
        group = n_head // n_kv
        out = np.zeros((T, n_head, d))
        for hh in range(n_head):
            kv = hh // group
            s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(d) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hh, :] = s @ v[:, kv, :]
        h = h + out.reshape(T, n_head * d) @ t[b + "attn_output.weight"].T
        x = rms_norm(h, t[b + "ffn_norm.weight"], eps)
        gate = x @ t[b + "ffn_gate.weight"].T
        up = x @ t[b + "ffn_up.weight"].T
        h = h + (gate / (1 + np.exp(-gate)) * up) @ t[b + "ffn_down.weight"].T
    x = rms_norm(h, t["output_norm.weight"], eps)
    out_w = t.get("output.weight", emb)
    return x @ out_w.T


def main():
    g = Gguf(sys.argv[1])
    tokens = [int(a) for a in sys.argv[3:]]
    logits = forward(g, tokens).astype("<f4")
    logits.tofile(sys.argv[2])


if __name__ == "__main__":
    main()
