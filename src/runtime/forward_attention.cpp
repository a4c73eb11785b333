// The attention block of one layer: norm, Q/K/V projections, per-head norms
// and RoPE, OSCAR rotations, attention over the cache plus the batch, the V
// rotation undone, output projection, optional post-norm, residual add.
#include <algorithm>

#include "attention/attention.h"
#include "kernels/ops.h"
#include "model/rotation_math.h"
#include "runtime/forward.h"
#include "runtime/layer_ops.h"

namespace oscar::runtime {

void Forward::attention_block(int il, int n) {
  const model::ModelConfig& c = model_.config();
  const model::LayerConfig& l = c.layers[(size_t)il];
  const model::LayerWeights& lw = model_.weights().layers[(size_t)il];
  const size_t E = (size_t)c.n_embd;
  const int hd = l.head_dim;
  const size_t qw = (size_t)l.n_head * hd, kvw = (size_t)l.n_head_kv * hd;
  const bool own = l.has_own_kv(il);
  const int src = own ? il : l.kv_layer;  // whose cache and rotations this layer uses

  for_tokens(n, [&](int i) { kernels::rms_norm(&x_[i * E], lw.attn_norm.data(), &xn_[i * E], c.n_embd, c.rms_eps); });
  kernels::MatmulOutput proj[3] = {{&lw.wq, q_.data(), qw}};
  int n_proj = 1;
  if (own) {
    proj[n_proj++] = {&lw.wk, k_.data(), kvw};
    if (!l.v_from_k) proj[n_proj++] = {&lw.wv, v_.data(), kvw};
  }
  kernels::matmul_shared_input(proj, n_proj, xn_.data(), E, n, pool_, mm_);
  // Gemma 4 k_eq_v layers: V is the K projection before K's norm and RoPE.
  if (own && l.v_from_k) std::copy(k_.begin(), k_.begin() + (long)(n * kvw), v_.begin());
  const bool neox = l.rope_style == model::RopeStyle::NeoX;
  const float* factors = lw.rope_freqs.empty() ? nullptr : lw.rope_freqs.data();
  const float* tables = rope_tables(l, factors, n);
  for_tokens(n, [&](int i) {
    float* q = &q_[i * qw];
    float* k = &k_[i * kvw];
    float* v = &v_[i * kvw];
    if (l.qkv_bias) {
      kernels::add_inplace(q, lw.bq.data(), qw);
      kernels::add_inplace(k, lw.bk.data(), kvw);
      kernels::add_inplace(v, lw.bv.data(), kvw);
    }
    const float* cos_sin = tables + (size_t)i * l.rope_dim;  // shared by all its heads
    for (int h = 0; h < l.n_head; ++h) {
      if (l.qk_norm) kernels::rms_norm(q + h * hd, lw.q_norm.data(), q + h * hd, hd, c.rms_eps);
      kernels::rope_apply(q + h * hd, l.rope_dim, cos_sin, neox);
    }
    if (!own) return;
    for (int h = 0; h < l.n_head_kv; ++h) {
      if (l.qk_norm) kernels::rms_norm(k + h * hd, lw.k_norm.data(), k + h * hd, hd, c.rms_eps);
      kernels::rope_apply(k + h * hd, l.rope_dim, cos_sin, neox);
      if (l.v_norm) rms_norm_plain(v + h * hd, v + h * hd, hd, c.rms_eps);
    }
  });
  if (own && shared_src_[(size_t)il] && opts_.observer) {
    kept_k_raw_[(size_t)il].assign(k_.begin(), k_.begin() + (long)(n * kvw));
    kept_v_raw_[(size_t)il].assign(v_.begin(), v_.begin() + (long)(n * kvw));
  }
  if (opts_.observer) {
    const float* ko = own ? k_.data() : kept_k_raw_[(size_t)src].data();
    const float* vo = own ? v_.data() : kept_v_raw_[(size_t)src].data();
    opts_.observer->on_qkv(il, l, n, seq_.data(), pos_.data(), q_.data(), ko, vo);
  }

  // OSCAR: Q and K heads rotated by the K rotation of the layer whose cache
  // is read (q.k unchanged), V heads by its V rotation before storing.
  const float* wk = rot_->k[(size_t)src];
  const float* wv = rot_->v[(size_t)src];
  // All heads of all tokens at once: rows of q_ / k_ / v_ are contiguous.
  if (wk) rotate_heads(wk, q_.data(), n * l.n_head, hd);
  if (own && wk) rotate_heads(wk, k_.data(), n * l.n_head_kv, hd);
  if (own && wv) rotate_heads(wv, v_.data(), n * l.n_head_kv, hd);
  if (own && shared_src_[(size_t)il]) {
    kept_k_[(size_t)il].assign(k_.begin(), k_.begin() + (long)(n * kvw));
    kept_v_[(size_t)il].assign(v_.begin(), v_.begin() + (long)(n * kvw));
  }
  const float* kb = own ? k_.data() : kept_k_[(size_t)src].data();
  const float* vb = own ? v_.data() : kept_v_[(size_t)src].data();
  attention::BatchView bv{n, seq_.data(), pos_.data(), q_.data(), kb, vb, n_cached_.data()};
  if (opts_.fused_attention) attention::attend_fused(l, il, cache_, bv, att_.data(), pool_);
  else attention::attend_reference(l, il, cache_, bv, att_.data(), pool_);
  // Undo the V rotation per head on the attention output.
  if (wv) rotate_heads(rot_->v_back[(size_t)src], att_.data(), n * l.n_head, hd);
  if (opts_.observer)
    opts_.observer->on_attention(il, l, {n, seq_.data(), pos_.data(), n_cached_.data(), q_.data(), kb, vb,
                                         att_.data(), &cache_});
  // A layer others share stores after the last of them (see eval).
  if (own && !shared_src_[(size_t)il]) store_kv(il, n, k_.data(), v_.data());
  kernels::matmul(lw.wo, att_.data(), qw, n, xn_.data(), E, pool_, mm_);
  for_tokens(n, [&](int i) {
    float* y = &xn_[i * E];
    if (l.post_norms) kernels::rms_norm(y, lw.post_attn_norm.data(), y, c.n_embd, c.rms_eps);
    kernels::add_inplace(&x_[i * E], y, E);
  });
}

}  // namespace oscar::runtime
