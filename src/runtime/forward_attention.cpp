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

void Forward::prepare_heads(int il, const float* rope, bool hadamard, size_t u0, size_t u1) {
  const model::ModelConfig& c = model_.config();
  const model::LayerConfig& l = c.layers[(size_t)il];
  const model::LayerWeights& lw = model_.weights().layers[(size_t)il];
  const int hd = l.head_dim, per_token = l.n_head + l.n_head_kv;
  const size_t qw = (size_t)l.n_head * hd, kvw = (size_t)l.n_head_kv * hd;
  const bool own = l.has_own_kv(il), neox = l.rope_style == model::RopeStyle::NeoX;
  const int src = own ? il : l.kv_layer;  // whose rotations apply
  const bool rotate_qk = hadamard && rot_->k[(size_t)src], rotate_v = hadamard && rot_->v[(size_t)src];
  for (size_t u = u0; u < u1; ++u) {
    const size_t i = u / (size_t)per_token;
    const int h = (int)(u % (size_t)per_token);
    const float* cos_sin = rope + i * (size_t)l.rope_dim;  // shared by all the token's heads
    if (h < l.n_head) {
      float* q = &q_[i * qw + (size_t)h * hd];
      if (l.qkv_bias) kernels::add_inplace(q, lw.bq.data() + (size_t)h * hd, (size_t)hd);
      if (l.qk_norm) kernels::rms_norm(q, lw.q_norm.data(), q, hd, c.rms_eps);
      kernels::rope_apply(q, l.rope_dim, cos_sin, neox);
      if (rotate_qk) model::hadamard_transform(q, hd);
      continue;
    }
    if (!own) continue;  // this layer reads another layer's K and V
    const size_t in_row = (size_t)(h - l.n_head) * hd;  // the KV head's offset in its token's row
    float* k = &k_[i * kvw + in_row];
    float* v = &v_[i * kvw + in_row];
    // Gemma 4 k_eq_v layers: V is the K projection before K's norm and RoPE.
    if (l.v_from_k) std::copy(k, k + hd, v);
    if (l.qkv_bias) {
      kernels::add_inplace(k, lw.bk.data() + in_row, (size_t)hd);
      kernels::add_inplace(v, lw.bv.data() + in_row, (size_t)hd);
    }
    if (l.qk_norm) kernels::rms_norm(k, lw.k_norm.data(), k, hd, c.rms_eps);
    kernels::rope_apply(k, l.rope_dim, cos_sin, neox);
    if (l.v_norm) rms_norm_plain(v, v, hd, c.rms_eps);
    if (rotate_qk) model::hadamard_transform(k, hd);
    if (rotate_v) model::hadamard_transform(v, hd);
  }
}

void Forward::attention_block(int il, int n) {
  const model::ModelConfig& c = model_.config();
  const model::LayerConfig& l = c.layers[(size_t)il];
  const model::LayerWeights& lw = model_.weights().layers[(size_t)il];
  const size_t E = (size_t)c.n_embd;
  const int hd = l.head_dim;
  const size_t qw = (size_t)l.n_head * hd, kvw = (size_t)l.n_head_kv * hd;
  const bool own = l.has_own_kv(il);
  const int src = own ? il : l.kv_layer;  // whose cache and rotations this layer uses
  clock_.mark(StepProfile::kOther);  // the embedding rows, or what the previous layer did after its FFN

  for_tokens(n, [&](int i) { kernels::rms_norm(&x_[i * E], lw.attn_norm.data(), &xn_[i * E], c.n_embd, c.rms_eps); });
  kernels::MatmulOutput proj[3] = {{&lw.wq, q_.data(), qw}};
  int n_proj = 1;
  if (own) {
    proj[n_proj++] = {&lw.wk, k_.data(), kvw};
    if (!l.v_from_k) proj[n_proj++] = {&lw.wv, v_.data(), kvw};
  }
  const float* factors = lw.rope_freqs.empty() ? nullptr : lw.rope_freqs.data();
  const float* tables = rope_tables(l, factors, n);
  // The heads' own steps follow the projections in their region, split over
  // the threads.
  const size_t heads = (size_t)n * (size_t)(l.n_head + l.n_head_kv);
  // The data-free Hadamard rotations go with them (a d log d transform per
  // head), unless an observer must see the heads before their rotation.
  const bool hadamard_here = rot_->mode == RotationMode::Hadamard && !opts_.observer;
  const kernels::RegionTail prepare = [&](int t, int nt) {
    prepare_heads(il, tables, hadamard_here, heads * (size_t)t / (size_t)nt, heads * (size_t)(t + 1) / (size_t)nt);
  };
  kernels::matmul_shared_input(proj, n_proj, xn_.data(), E, n, pool_, mm_, &prepare);
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
  if (!hadamard_here) {
    if (wk) rotate_heads(wk, q_.data(), n * l.n_head, hd);
    if (own && wk) rotate_heads(wk, k_.data(), n * l.n_head_kv, hd);
    if (own && wv) rotate_heads(wv, v_.data(), n * l.n_head_kv, hd);
  }
  clock_.mark(StepProfile::kAttnIn);
  if (own && shared_src_[(size_t)il]) {
    kept_k_[(size_t)il].assign(k_.begin(), k_.begin() + (long)(n * kvw));
    kept_v_[(size_t)il].assign(v_.begin(), v_.begin() + (long)(n * kvw));
  }
  const float* kb = own ? k_.data() : kept_k_[(size_t)src].data();
  const float* vb = own ? v_.data() : kept_v_[(size_t)src].data();
  attention::BatchView bv{n, seq_.data(), pos_.data(), q_.data(), kb, vb, n_cached_.data()};
  if (opts_.fused_attention) attention::attend_fused(l, il, cache_, bv, att_.data(), pool_, attn_kernels_);
  else attention::attend_reference(l, il, cache_, bv, att_.data(), pool_);
  // Undo the V rotation per head on the attention output.
  if (wv) rotate_heads(rot_->v_back[(size_t)src], att_.data(), n * l.n_head, hd);
  if (opts_.observer)
    opts_.observer->on_attention(il, l, {n, seq_.data(), pos_.data(), n_cached_.data(), q_.data(), kb, vb,
                                         att_.data(), &cache_});
  // A layer others share stores after the last of them (see eval).
  if (own && !shared_src_[(size_t)il]) store_kv(il, n, k_.data(), v_.data());
  clock_.mark(StepProfile::kAttention);
  kernels::matmul(lw.wo, att_.data(), qw, n, xn_.data(), E, pool_, mm_);
  for_tokens(n, [&](int i) {
    float* y = &xn_[i * E];
    if (l.post_norms) kernels::rms_norm(y, lw.post_attn_norm.data(), y, c.n_embd, c.rms_eps);
    kernels::add_inplace(&x_[i * E], y, E);
  });
  clock_.mark(StepProfile::kAttnOut);
}

}  // namespace oscar::runtime
