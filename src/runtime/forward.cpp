#include "runtime/forward.h"

#include <algorithm>
#include <map>

#include "attention/attention.h"
#include "core/error.h"
#include "kernels/ops.h"
#include "model/rotation_math.h"

namespace oscar::runtime {

Forward::Forward(const model::Model& model, kv::KvCache& cache, ThreadPool& pool, ForwardOptions opts)
    : model_(model), cache_(cache), pool_(pool), opts_(opts) {
  if (!opts_.rotations) own_rotations_ = RotationPlan::make(model, /*q2_cache=*/false, /*no_hadamard=*/true);
  rot_ = opts_.rotations ? opts_.rotations : &own_rotations_;
}

void Forward::validate(const std::vector<BatchToken>& batch, std::vector<int>& n_cached) const {
  const int n_vocab = model_.config().n_vocab;
  std::map<int, int> next;  // seq -> next expected position
  n_cached.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchToken& t = batch[i];
    require(t.token >= 0 && t.token < n_vocab, "batch: token id " + std::to_string(t.token) +
                                                   " out of range [0, " + std::to_string(n_vocab) + ")");
    require(t.seq >= 0 && t.seq < cache_.n_seq(), "batch: sequence id " + std::to_string(t.seq) +
                                                       " out of range");
    auto it = next.find(t.seq);
    if (it == next.end()) it = next.emplace(t.seq, cache_.n_pos(t.seq)).first;
    require(t.pos == it->second, "batch: sequence " + std::to_string(t.seq) + " expects position " +
                                     std::to_string(it->second) + ", got " + std::to_string(t.pos));
    require(t.pos < cache_.capacity(), "batch: sequence " + std::to_string(t.seq) +
                                           " is full (context " + std::to_string(cache_.capacity()) + ")");
    ++it->second;
    n_cached[i] = cache_.n_pos(t.seq);
  }
}

const std::vector<float>& Forward::eval(const std::vector<BatchToken>& batch) {
  const model::ModelConfig& c = model_.config();
  const model::ModelWeights& w = model_.weights();
  const int n = (int)batch.size();
  logits_.clear();
  if (n == 0) return logits_;
  validate(batch, n_cached_);

  const size_t E = (size_t)c.n_embd;
  x_.resize((size_t)n * E);
  xn_.resize((size_t)n * E);
  q_.resize((size_t)n * c.max_q_width());
  k_.resize((size_t)n * c.max_kv_width());
  v_.resize((size_t)n * c.max_kv_width());
  att_.resize((size_t)n * c.max_q_width());
  ff_a_.resize((size_t)n * c.n_ff);
  ff_b_.resize((size_t)n * c.n_ff);
  seq_.resize((size_t)n);
  pos_.resize((size_t)n);

  // Embedding rows, decoded from whatever type token_embd is stored in.
  for (int i = 0; i < n; ++i) {
    const auto* row = static_cast<const uint8_t*>(w.tok_embd.data) + (size_t)batch[(size_t)i].token * w.tok_embd.row_bytes;
    w.tok_embd.traits->dequantize(row, &x_[(size_t)i * E], c.n_embd);
    seq_[(size_t)i] = batch[(size_t)i].seq;
    pos_[(size_t)i] = batch[(size_t)i].pos;
  }

  for (int il = 0; il < c.n_layer; ++il) layer(il, n);

  // Commit: every sequence now holds up to its last batch position.
  for (int i = 0; i < n; ++i) cache_.commit(seq_[(size_t)i], pos_[(size_t)i] + 1);

  // Final norm and output projection, only for the tokens that want logits.
  std::vector<float> rows;
  for (int i = 0; i < n; ++i)
    if (batch[(size_t)i].logits) {
      rows.resize(rows.size() + E);
      kernels::rms_norm(&x_[(size_t)i * E], w.output_norm.data(), &rows[rows.size() - E], c.n_embd, c.rms_eps);
    }
  const int64_t n_out = (int64_t)(rows.size() / E);
  logits_.resize((size_t)n_out * c.n_vocab);
  if (n_out > 0)
    kernels::matmul(w.output, rows.data(), E, n_out, logits_.data(), (size_t)c.n_vocab, pool_, mm_);
  return logits_;
}

void Forward::layer(int il, int n) {
  const model::ModelConfig& c = model_.config();
  const model::LayerConfig& l = c.layers[(size_t)il];
  const model::LayerWeights& lw = model_.weights().layers[(size_t)il];
  const size_t E = (size_t)c.n_embd;
  const int hd = l.head_dim;
  const size_t qw = (size_t)l.n_head * hd, kvw = (size_t)l.n_head_kv * hd, ff = (size_t)c.n_ff;

  // --- attention ---
  for (int i = 0; i < n; ++i)
    kernels::rms_norm(&x_[i * E], lw.attn_norm.data(), &xn_[i * E], c.n_embd, c.rms_eps);
  kernels::matmul(lw.wq, xn_.data(), E, n, q_.data(), qw, pool_, mm_);
  kernels::matmul(lw.wk, xn_.data(), E, n, k_.data(), kvw, pool_, mm_);
  kernels::matmul(lw.wv, xn_.data(), E, n, v_.data(), kvw, pool_, mm_);
  for (int i = 0; i < n; ++i) {
    float* q = &q_[i * qw];
    float* k = &k_[i * kvw];
    float* v = &v_[i * kvw];
    if (l.qkv_bias) {
      kernels::add_inplace(q, lw.bq.data(), qw);
      kernels::add_inplace(k, lw.bk.data(), kvw);
      kernels::add_inplace(v, lw.bv.data(), kvw);
    }
    const bool neox = l.rope_style == model::RopeStyle::NeoX;
    float cos_sin[1024];  // one table per token, shared by all its heads
    kernels::rope_table(l.rope_dim, pos_[i], l.rope_base, cos_sin);
    for (int h = 0; h < l.n_head; ++h) {
      if (l.qk_norm) kernels::rms_norm(q + h * hd, lw.q_norm.data(), q + h * hd, hd, c.rms_eps);
      kernels::rope_apply(q + h * hd, l.rope_dim, cos_sin, neox);
    }
    for (int h = 0; h < l.n_head_kv; ++h) {
      if (l.qk_norm) kernels::rms_norm(k + h * hd, lw.k_norm.data(), k + h * hd, hd, c.rms_eps);
      kernels::rope_apply(k + h * hd, l.rope_dim, cos_sin, neox);
    }
  }
  if (opts_.observer) opts_.observer->on_qkv(il, l, n, seq_.data(), pos_.data(), q_.data(), k_.data(), v_.data());
  for (int i = 0; i < n; ++i) {
    float* q = &q_[i * qw];
    float* k = &k_[i * kvw];
    float* v = &v_[i * kvw];
    // OSCAR: Q and K heads rotated by the layer's K rotation after RoPE
    // (q.k unchanged), V heads by the V rotation before they are stored.
    float tmp[1024];
    if (const float* wk = rot_->k[(size_t)il]) {
      for (int h = 0; h < l.n_head; ++h) {
        model::rotate(wk, q + h * hd, tmp, hd);
        std::copy(tmp, tmp + hd, q + h * hd);
      }
      for (int h = 0; h < l.n_head_kv; ++h) {
        model::rotate(wk, k + h * hd, tmp, hd);
        std::copy(tmp, tmp + hd, k + h * hd);
      }
    }
    if (const float* wv = rot_->v[(size_t)il])
      for (int h = 0; h < l.n_head_kv; ++h) {
        model::rotate(wv, v + h * hd, tmp, hd);
        std::copy(tmp, tmp + hd, v + h * hd);
      }
  }
  attention::BatchView bv{n, seq_.data(), pos_.data(), q_.data(), k_.data(), v_.data(), n_cached_.data()};
  if (opts_.fused_attention) attention::attend_fused(l, il, cache_, bv, att_.data(), pool_);
  else attention::attend_reference(l, il, cache_, bv, att_.data(), pool_);
  for (int i = 0; i < n; ++i) cache_.store(seq_[i], il, pos_[i], &k_[i * kvw], &v_[i * kvw]);
  // Undo the V rotation per head on the attention output.
  if (const float* wv = rot_->v[(size_t)il]) {
    float tmp[1024];
    for (int i = 0; i < n; ++i)
      for (int h = 0; h < l.n_head; ++h) {
        float* o = &att_[i * qw + (size_t)h * hd];
        model::rotate_back(wv, o, tmp, hd);
        std::copy(tmp, tmp + hd, o);
      }
  }
  kernels::matmul(lw.wo, att_.data(), qw, n, xn_.data(), E, pool_, mm_);
  kernels::add_inplace(x_.data(), xn_.data(), (size_t)n * E);

  // --- feed-forward (SwiGLU) ---
  for (int i = 0; i < n; ++i)
    kernels::rms_norm(&x_[i * E], lw.ffn_norm.data(), &xn_[i * E], c.n_embd, c.rms_eps);
  kernels::matmul(lw.ffn_gate, xn_.data(), E, n, ff_a_.data(), ff, pool_, mm_);
  kernels::matmul(lw.ffn_up, xn_.data(), E, n, ff_b_.data(), ff, pool_, mm_);
  kernels::swiglu(ff_a_.data(), ff_b_.data(), ff_a_.data(), (size_t)n * ff);
  kernels::matmul(lw.ffn_down, ff_a_.data(), ff, n, xn_.data(), E, pool_, mm_);
  kernels::add_inplace(x_.data(), xn_.data(), (size_t)n * E);
}

}  // namespace oscar::runtime
