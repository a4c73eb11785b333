"""NumPy reference forward pass for gemma3 and gemma4 GGUF models.

Written from the published model definitions (Hugging Face modeling_gemma3 /
modeling_gemma4 and their configurations), in float64, reading the GGUF with
the independent gguf_min reader. How the converter maps the Hugging Face
checkpoint to GGUF (the only facts taken from llama.cpp's convert_hf_to_gguf):
  - gemma3 norm weights are stored as 1 + w (Gemma3RMSNorm multiplies by
    1 + w); gemma4 norm weights are stored as they are (Gemma4RMSNorm
    multiplies by w);
  - gemma3 files carry no layer pattern: config.sliding_window_pattern = 6,
    i.e. layer i is sliding when (i + 1) % 6 != 0; gemma4 files carry
    attention.sliding_window_pattern, one boolean per layer (true = sliding);
  - gemma4 global layers: key_length / rope.freq_base; sliding layers:
    key_length_swa / rope.freq_base_swa; rope_freqs.weight marks the pairs of
    the proportional RoPE: 1 for rotated, 1e30 for the others;
  - a gemma4 global layer without attn_v.weight is an attention_k_eq_v layer;
  - query_pre_attn_scalar of gemma3 is the head dim, except in the 27B model
    (62 layers) where it is hidden_size / num_attention_heads.

Usage: gemma_ref.py MODEL.gguf OUT.bin TOKEN [TOKEN ...]
Writes float32 logits (n_tokens, n_vocab), little-endian, row-major.
"""
import math
import sys

import numpy as np

from gguf_min import Gguf


def rms_normalize(x, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def gelu_tanh(x):
    # ACT2FN["gelu_pytorch_tanh"]
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


def apply_rope(x, pos, inv_freq):
    # x: (T, H, d); HF: emb = cat(freqs, freqs); x * cos + rotate_half(x) * sin
    freqs = pos[:, None] * inv_freq[None, :]
    emb = np.concatenate((freqs, freqs), axis=-1)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
    return x * cos + rotate_half(x) * sin


def default_inv_freq(base, dim):
    return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


def attention(q, k, v, scaling, window):
    # q: (T, Hq, d), k/v: (T, Hkv, d); causal, optionally sliding-window.
    T, n_head, _ = q.shape
    group = n_head // k.shape[1]
    qi = np.arange(T)[:, None]
    ki = np.arange(T)[None, :]
    allowed = ki <= qi
    if window:
        allowed &= ki > qi - window
    out = np.zeros((T, n_head, v.shape[-1]))
    for h in range(n_head):
        s = q[:, h, :] @ k[:, h // group, :].T * scaling
        s = np.where(allowed, s, -np.inf)
        s = np.exp(s - s.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        out[:, h, :] = s @ v[:, h // group, :]
    return out.reshape(T, -1)


def per_layer(meta, key, n_layer):
    v = meta[key]
    return list(v) if isinstance(v, list) else [v] * n_layer


class Gemma:
    def __init__(self, g):
        self.g = g
        self.t = g.tensors
        self.arch = g.meta["general.architecture"]
        assert self.arch in ("gemma3", "gemma4"), self.arch
        p = self.p = self.arch + "."
        m = g.meta
        self.n_layer = m[p + "block_count"]
        self.n_embd = m[p + "embedding_length"]
        self.n_head = m[p + "attention.head_count"]
        self.n_kv = per_layer(m, p + "attention.head_count_kv", self.n_layer)
        self.eps = m[p + "attention.layer_norm_rms_epsilon"]
        self.window = m.get(p + "attention.sliding_window", 0)
        self.softcap = m.get(p + "final_logit_softcapping", 0.0)
        self.head_dim = m[p + "attention.key_length"]
        if self.arch == "gemma3":
            self.sliding = [bool(self.window) and (i + 1) % 6 != 0 for i in range(self.n_layer)]
            if p + "attention.sliding_window_pattern" in m:
                self.sliding = [bool(b) for b in m[p + "attention.sliding_window_pattern"]]
        else:
            self.sliding = [bool(b) for b in m[p + "attention.sliding_window_pattern"]]
        self.head_dim_swa = m.get(p + "attention.key_length_swa", self.head_dim)
        self.n_shared = m.get(p + "attention.shared_kv_layers", 0)
        self.ple = m.get(p + "embedding_length_per_layer_input", 0)

    def norm_weight(self, name):
        w = self.t[name]
        if self.arch == "gemma3":
            w_hf = w - 1.0  # the file holds 1 + w_hf
            return 1.0 + w_hf  # Gemma3RMSNorm: x / rms * (1 + w_hf)
        return w  # Gemma4RMSNorm: x / rms * w

    def norm(self, x, name):
        return rms_normalize(x, self.eps) * self.norm_weight(name)

    def inv_freq(self, i):
        m, p = self.g.meta, self.p
        if self.arch == "gemma3":
            if self.sliding[i]:
                return default_inv_freq(10000.0, self.head_dim)  # rope_local_base_freq
            inv = default_inv_freq(m[p + "rope.freq_base"], self.head_dim)
            if m.get(p + "rope.scaling.type") == "linear":
                inv = inv / m[p + "rope.scaling.factor"]
            return inv
        if self.sliding[i]:
            return default_inv_freq(m.get(p + "rope.freq_base_swa", 10000.0), self.head_dim_swa)
        # "proportional": the first rope_angles pairs rotate with exponents
        # over the full head dim, the others not at all.
        d = self.head_dim
        rope_angles = int(np.sum(self.t["rope_freqs.weight"] < 1e29))
        rotated = 1.0 / m[p + "rope.freq_base"] ** (np.arange(0, 2 * rope_angles, 2, dtype=np.float64) / d)
        return np.concatenate((rotated, np.zeros(d // 2 - rope_angles)))

    def forward(self, tokens):
        t = self.t
        T = len(tokens)
        pos = np.arange(T, dtype=np.float64)
        ids = np.array(tokens)
        emb = t["token_embd.weight"]
        h = emb[ids] * math.sqrt(self.n_embd)  # ScaledWordEmbedding
        per_layer_inputs = None
        if self.ple:
            P = self.ple
            tok = (t["per_layer_token_embd.weight"][ids] * math.sqrt(P)).reshape(T, self.n_layer, P)
            proj = (h @ t["per_layer_model_proj.weight"].T) * self.n_embd ** -0.5
            proj = self.norm(proj.reshape(T, self.n_layer, P), "per_layer_proj_norm.weight")
            per_layer_inputs = (proj + tok) * 2.0 ** -0.5
        first_shared = self.n_layer - self.n_shared
        shared_kv = {}
        for i in range(self.n_layer):
            b = "blk.%d." % i
            d = self.head_dim_swa if (self.arch == "gemma4" and self.sliding[i]) else self.head_dim
            kind = self.sliding[i]
            x = self.norm(h, b + "attn_norm.weight")
            q = (x @ t[b + "attn_q.weight"].T).reshape(T, self.n_head, d)
            q = self.norm(q, b + "attn_q_norm.weight")
            inv = self.inv_freq(i)
            q = apply_rope(q, pos, inv)
            if self.arch == "gemma4" and i >= first_shared:
                k, v = shared_kv[kind]
            else:
                kraw = (x @ t[b + "attn_k.weight"].T).reshape(T, self.n_kv[i], d)
                if b + "attn_v.weight" in t:
                    v = (x @ t[b + "attn_v.weight"].T).reshape(T, self.n_kv[i], d)
                else:
                    v = kraw  # attention_k_eq_v: value_states = key_states before k_norm
                k = apply_rope(self.norm(kraw, b + "attn_k_norm.weight"), pos, inv)
                if self.arch == "gemma4":
                    v = rms_normalize(v, self.eps)  # v_norm, with_scale=False
                    # store_full_length_kv: the last layer of its kind before the shared block
                    if i < first_shared and kind not in [self.sliding[j] for j in range(i + 1, first_shared)]:
                        shared_kv[kind] = (k, v)
            if self.arch == "gemma3":
                scalar = self.n_embd / self.n_head if self.n_layer == 62 else self.head_dim
                scaling = scalar ** -0.5
            else:
                scaling = 1.0
            a = attention(q, k, v, scaling, self.window if self.sliding[i] else 0)
            a = a @ t[b + "attn_output.weight"].T
            h = h + self.norm(a, b + "post_attention_norm.weight")
            x = self.norm(h, b + "ffn_norm.weight")
            f = (gelu_tanh(x @ t[b + "ffn_gate.weight"].T) * (x @ t[b + "ffn_up.weight"].T)) @ t[b + "ffn_down.weight"].T
            h = h + self.norm(f, b + "post_ffw_norm.weight")
            if per_layer_inputs is not None:
                g = gelu_tanh(h @ t[b + "inp_gate.weight"].T) * per_layer_inputs[:, i, :]
                h = h + self.norm(g @ t[b + "proj.weight"].T, b + "post_norm.weight")
            if b + "layer_output_scale.weight" in t:
                h = h * t[b + "layer_output_scale.weight"].reshape(())
        x = self.norm(h, "output_norm.weight")
        logits = x @ t.get("output.weight", emb).T
        if self.softcap:
            logits = np.tanh(logits / self.softcap) * self.softcap
        return logits


def main():
    g = Gguf(sys.argv[1])
    tokens = [int(a) for a in sys.argv[3:]]
    Gemma(g).forward(tokens).astype("<f4").tofile(sys.argv[2])


if __name__ == "__main__":
    main()
