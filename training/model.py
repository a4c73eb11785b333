"""The qwen3 architecture in PyTorch, as our engine runs it: pre-norm
blocks, GQA attention with a per-head RMSNorm on Q and K before NeoX-style
(rotate-half) RoPE, SwiGLU FFN, tied input/output embeddings."""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_vocab: int = 4096
    n_embd: int = 256
    n_layer: int = 6
    n_head: int = 8
    n_head_kv: int = 2
    head_dim: int = 64
    n_ff: int = 768
    n_ctx: int = 1024
    rope_theta: float = 10000.0
    rms_eps: float = 1e-6
    dropout: float = 0.0  # training only; the exported model has none

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_tables(cfg, n, device=None):
    half = cfg.head_dim // 2
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, half, dtype=torch.float64) * 2 / cfg.head_dim))
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().float().to(device), ang.sin().float().to(device)


def apply_rope(x, cos, sin):
    # x: (B, H, T, D); NeoX pairs element i with i + D/2.
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def causal_attention_blocked(q, k, v, mask, block=128):
    """Causal GQA attention for torch < 2.0 (Debian's CPU torch has no fused
    kernel). Query blocks only see the keys up to their own end, so the
    masked upper triangle is mostly never computed (36/64 of the full score
    matrix for 8 blocks), and each KV head's query heads share one matmul
    instead of a repeat_interleave copy of K and V. The engine-vs-PyTorch
    logits check (tests/trained/check_logits.py) runs through it.
    q: (B, Hq, T, D); k, v: (B, Hkv, T, D); mask: (T, T) additive."""
    B, Hq, T, D = q.shape
    Hkv = k.shape[1]
    rep = Hq // Hkv
    qg = (q * (1.0 / math.sqrt(D))).view(B, Hkv, rep, T, D)
    out = []
    for s in range(0, T, block):
        e = min(T, s + block)
        n = e - s
        qb = qg[:, :, :, s:e].reshape(B, Hkv, rep * n, D)
        att = (qb @ k[:, :, :e].transpose(-2, -1)).view(B, Hkv, rep, n, e)
        att = F.softmax((att + mask[s:e, :e]).float(), dim=-1).type_as(q)
        out.append((att.view(B, Hkv, rep * n, e) @ v[:, :, :e]).view(B, Hkv, rep, n, D))
    return torch.cat(out, dim=3).view(B, Hq, T, D)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        e, hd = cfg.n_embd, cfg.head_dim
        self.attn_norm = RMSNorm(e, cfg.rms_eps)
        self.wq = nn.Linear(e, cfg.n_head * hd, bias=False)
        self.wk = nn.Linear(e, cfg.n_head_kv * hd, bias=False)
        self.wv = nn.Linear(e, cfg.n_head_kv * hd, bias=False)
        self.wo = nn.Linear(cfg.n_head * hd, e, bias=False)
        self.q_norm = RMSNorm(hd, cfg.rms_eps)
        self.k_norm = RMSNorm(hd, cfg.rms_eps)
        self.ffn_norm = RMSNorm(e, cfg.rms_eps)
        self.ffn_gate = nn.Linear(e, cfg.n_ff, bias=False)
        self.ffn_up = nn.Linear(e, cfg.n_ff, bias=False)
        self.ffn_down = nn.Linear(cfg.n_ff, e, bias=False)

    def qkv(self, x, cos, sin):
        """Post-RoPE Q, K and V, each (B, heads, T, head_dim)."""
        cfg = self.cfg
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.q_norm(self.wq(h).view(B, T, cfg.n_head, cfg.head_dim)).transpose(1, 2)
        k = self.k_norm(self.wk(h).view(B, T, cfg.n_head_kv, cfg.head_dim)).transpose(1, 2)
        v = self.wv(h).view(B, T, cfg.n_head_kv, cfg.head_dim).transpose(1, 2)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def forward(self, x, cos, sin, mask, probe=None):
        cfg = self.cfg
        B, T, _ = x.shape
        q, k, v = self.qkv(x, cos, sin)
        rep = cfg.n_head // cfg.n_head_kv
        if probe is None and hasattr(F, "scaled_dot_product_attention"):
            # torch >= 2.0 (the GPU trainer): the fused kernel, same maths.
            # Under autocast V is bf16 while the normed, rotated Q/K are f32.
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            y = F.scaled_dot_product_attention(q.to(v.dtype), k.to(v.dtype), v, is_causal=True)
        elif probe is None:
            y = causal_attention_blocked(q, k, v, mask)
        else:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(cfg.head_dim)) + mask
            att = F.softmax(att.float(), dim=-1).type_as(q)
            probe(q, k, att)
            y = att @ v
        y = y.transpose(1, 2).reshape(B, T, cfg.n_head * cfg.head_dim)
        p = cfg.dropout if self.training else 0.0
        x = x + F.dropout(self.wo(y), p)
        h = self.ffn_norm(x)
        return x + F.dropout(self.ffn_down(F.silu(self.ffn_gate(h)) * self.ffn_up(h)), p)


class Qwen3(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.n_vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.output_norm = RMSNorm(cfg.n_embd, cfg.rms_eps)
        self.apply(self._init)
        # Scaled init of the residual projections keeps the stream's growth
        # independent of depth.
        for b in self.blocks:
            nn.init.normal_(b.wo.weight, std=0.02 / math.sqrt(2 * cfg.n_layer))
            nn.init.normal_(b.ffn_down.weight, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx, probe=None):
        B, T = idx.shape
        cos, sin = rope_tables(self.cfg, T, idx.device)
        mask = torch.full((T, T), float("-inf"), device=idx.device).triu(1)
        x = self.tok_embd(idx)
        for i, b in enumerate(self.blocks):
            x = b(x, cos, sin, mask, None if probe is None else (lambda q, k, a, i=i: probe(i, q, k, a)))
        return self.output_norm(x) @ self.tok_embd.weight.t()
