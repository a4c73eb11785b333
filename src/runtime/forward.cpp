#include "runtime/forward.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "kernels/ops.h"
#include "model/rotation_math.h"
#include "runtime/layer_ops.h"

namespace oscar::runtime {

Forward::Forward(const model::Model& model, kv::KvCache& cache, ThreadPool& pool, ForwardOptions opts)
    : model_(model), cache_(cache), pool_(pool), opts_(opts), clock_(opts.profile),
      f32_(&model.quant_table().get(TensorType::F32, "rotation")),
      attn_kernels_(model.quant_table().cpu()) {
  if (!opts_.rotations) own_rotations_ = RotationPlan::make(model, /*q2_cache=*/false, /*no_hadamard=*/true);
  rot_ = opts_.rotations ? opts_.rotations : &own_rotations_;
  const model::ModelConfig& c = model_.config();
  const size_t L = (size_t)c.n_layer;
  shared_src_.assign(L, false);
  for (int il = 0; il < c.n_layer; ++il) {
    const model::LayerConfig& l = c.layers[(size_t)il];
    if (!l.has_own_kv(il)) shared_src_[(size_t)l.kv_layer] = true;
  }
  kept_k_.resize(L);
  kept_v_.resize(L);
  kept_k_raw_.resize(L);
  kept_v_raw_.resize(L);
}

void Forward::rotate_heads(const float* w, float* x, int count, int d) {
  // The data-free Hadamard by its fast transform (d log d); dense rotations
  // as one f32 matrix product over all heads of the batch, on the pool.
  if (rot_->mode == RotationMode::Hadamard) {
    // On the pool for a prompt's thousands of heads (serial, it cost 11% of
    // qwen3-0.6b's pp512); a decode token's few stay on this thread.
    pool_.parallel_for((size_t)count, 64, [&](size_t h0, size_t h1) {
      for (size_t h = h0; h < h1; ++h) model::hadamard_transform(x + h * d, d);
    });
    return;
  }
  const kernels::WeightMatrix m{f32_, w, d, d, (size_t)d * sizeof(float)};
  rot_tmp_.resize((size_t)count * d);
  kernels::matmul(m, x, (size_t)d, count, rot_tmp_.data(), (size_t)d, pool_, mm_);
  std::copy(rot_tmp_.begin(), rot_tmp_.end(), x);
}

void Forward::validate(const std::vector<BatchToken>& batch, std::vector<int>& n_cached) const {
  const int n_vocab = model_.config().n_vocab;
  std::map<int, int> next;  // seq -> next expected position
  n_cached.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchToken& t = batch[i];
    require(t.token >= 0 && t.token < n_vocab, [&] {
      return "batch: token id " + std::to_string(t.token) + " out of range [0, " + std::to_string(n_vocab) +
             ")";
    });
    require(t.seq >= 0 && t.seq < cache_.n_seq(),
            [&] { return "batch: sequence id " + std::to_string(t.seq) + " out of range"; });
    auto it = next.find(t.seq);
    if (it == next.end()) it = next.emplace(t.seq, cache_.n_pos(t.seq)).first;
    require(t.pos == it->second, [&] {
      return "batch: sequence " + std::to_string(t.seq) + " expects position " + std::to_string(it->second) +
             ", got " + std::to_string(t.pos);
    });
    require(t.pos < cache_.capacity(), [&] {
      return "batch: sequence " + std::to_string(t.seq) + " is full (context " +
             std::to_string(cache_.capacity()) + ")";
    });
    ++it->second;
    n_cached[i] = cache_.n_pos(t.seq);
  }
}

void Forward::reserve_pages(const std::vector<BatchToken>& batch) {
  // Every sequence's pages for the batch's positions, before anything is
  // stored: a pool that runs short fails the batch with the cache untouched.
  std::map<int, int> end;  // seq -> positions after the batch
  for (const BatchToken& t : batch) end[t.seq] = std::max(end[t.seq], t.pos + 1);
  for (const auto& entry : end) {
    // Plain names, not a structured binding: a lambda may not capture one before C++20 in clang 14.
    const int seq = entry.first, n = entry.second;
    require(cache_.reserve(seq, n), [&] {
      return "KV pool full: sequence " + std::to_string(seq) + " needs pages for " + std::to_string(n) +
             " positions and the pool has " + std::to_string(cache_.free_positions()) + " of " +
             std::to_string(cache_.pool_positions()) + " positions free";
    });
  }
}

const std::vector<float>& Forward::eval(const std::vector<BatchToken>& batch) {
  const model::ModelConfig& c = model_.config();
  const model::ModelWeights& w = model_.weights();
  const int n = (int)batch.size();
  if (n == 0) {
    logits_.clear();
    return logits_;
  }
  validate(batch, n_cached_);
  reserve_pages(batch);
  clock_.start();

  const size_t E = (size_t)c.n_embd;
  x_.resize((size_t)n * E);
  xn_.resize((size_t)n * E);
  q_.resize((size_t)n * c.max_q_width());
  k_.resize((size_t)n * c.max_kv_width());
  v_.resize((size_t)n * c.max_kv_width());
  att_.resize((size_t)n * c.max_q_width());
  ff_a_.resize((size_t)n * c.max_ff());
  ff_b_.resize((size_t)n * c.max_ff());
  seq_.resize((size_t)n);
  pos_.resize((size_t)n);

  // Embedding rows, decoded from whatever type token_embd is stored in
  // (Gemma scales them by sqrt(n_embd)).
  for (int i = 0; i < n; ++i) {
    kernels::dequantize_row(w.tok_embd, batch[(size_t)i].token, &x_[(size_t)i * E]);
    if (c.embd_scale != 1.0f) scale(&x_[(size_t)i * E], E, c.embd_scale);
    seq_[(size_t)i] = batch[(size_t)i].seq;
    pos_[(size_t)i] = batch[(size_t)i].pos;
  }
  if (c.n_embd_per_layer > 0) ple_inputs(batch, n);
  n_rope_ = 0;  // new positions

  for (int il = 0; il < c.n_layer; ++il) layer(il, n);

  // KV kept for sharing layers is stored once every sharer has read it.
  for (int il = 0; il < c.n_layer; ++il)
    if (shared_src_[(size_t)il]) store_kv(il, n, kept_k_[(size_t)il].data(), kept_v_[(size_t)il].data());

  // Commit: every sequence now holds up to its last batch position.
  for (int i = 0; i < n; ++i) cache_.commit(seq_[(size_t)i], pos_[(size_t)i] + 1);

  clock_.mark(StepProfile::kOther);

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
  if (c.final_logit_softcap > 0) softcap(logits_.data(), logits_.size(), c.final_logit_softcap);
  clock_.mark(StepProfile::kLogits);
  clock_.end_eval();
  return logits_;
}

void Forward::output_hidden(int i, float* out) const {
  const model::ModelConfig& c = model_.config();
  const size_t E = (size_t)c.n_embd;
  require(i >= 0 && (size_t)(i + 1) * E <= x_.size(), "output_hidden: no such token in the last batch");
  kernels::rms_norm(&x_[(size_t)i * E], model_.weights().output_norm.data(), out, c.n_embd, c.rms_eps);
}

void Forward::for_tokens(int n, const std::function<void(int)>& fn) {
  // Below this many tokens the per-token work (a few thousand floats) does
  // not pay for a parallel region.
  constexpr int kParallelTokens = 16;
  if (n < kParallelTokens) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  pool_.parallel_for((size_t)n, 4, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) fn((int)i);
  });
}

const float* Forward::rope_tables(const model::LayerConfig& l, const float* factors, int n) {
  for (size_t i = 0; i < n_rope_; ++i) {
    const RopeTables& t = rope_[i];
    if (t.rope_dim == l.rope_dim && t.base == l.rope_base && t.freq_scale == l.rope_freq_scale &&
        t.factors == factors)
      return t.cos_sin.data();
  }
  if (n_rope_ == rope_.size()) rope_.emplace_back();
  RopeTables& t = rope_[n_rope_++];
  t.rope_dim = l.rope_dim;
  t.base = l.rope_base;
  t.freq_scale = l.rope_freq_scale;
  t.factors = factors;
  t.cos_sin.resize((size_t)n * l.rope_dim);
  for_tokens(n, [&](int i) {
    rope_table_ext(l.rope_dim, pos_[i], l.rope_base, l.rope_freq_scale, factors,
                   &t.cos_sin[(size_t)i * l.rope_dim]);
  });
  return t.cos_sin.data();
}

void Forward::store_kv(int il, int n, const float* k, const float* v) {
  const model::LayerConfig& l = model_.config().layers[(size_t)il];
  const size_t kvw = (size_t)l.n_head_kv * l.head_dim;
  for (int i = 0; i < n; ++i) cache_.store(seq_[(size_t)i], il, pos_[(size_t)i], &k[i * kvw], &v[i * kvw]);
}

void Forward::layer(int il, int n) {
  const model::ModelConfig& c = model_.config();
  attention_block(il, n);
  ffn_block(il, n);
  if (c.n_embd_per_layer > 0) ple_block(il, n);
  // Gemma 4's layer_output_scale multiplies the whole stream, residual included.
  const float s = model_.weights().layers[(size_t)il].out_scale;
  if (s != 1.0f) scale(x_.data(), (size_t)n * c.n_embd, s);
}

void Forward::ffn_block(int il, int n) {
  const model::ModelConfig& c = model_.config();
  const model::LayerConfig& l = c.layers[(size_t)il];
  const model::LayerWeights& lw = model_.weights().layers[(size_t)il];
  const size_t E = (size_t)c.n_embd, ff = (size_t)c.ff_of(il);
  for_tokens(n, [&](int i) { kernels::rms_norm(&x_[i * E], lw.ffn_norm.data(), &xn_[i * E], c.n_embd, c.rms_eps); });
  const kernels::MatmulOutput gate_up[2] = {{&lw.ffn_gate, ff_a_.data(), ff}, {&lw.ffn_up, ff_b_.data(), ff}};
  // The gated activation follows the products in their region, each thread
  // taking a range of the values (all tokens' rows lie back to back).
  const bool gelu = l.ffn_act == model::FfnActivation::GeluTanh;
  const size_t values = (size_t)n * ff;
  const kernels::RegionTail activate = [&](int t, int nt) {
    constexpr size_t kAlign = 64;  // whole cache lines per thread
    const size_t a = values * (size_t)t / (size_t)nt / kAlign * kAlign;
    const size_t e = t + 1 == nt ? values : values * (size_t)(t + 1) / (size_t)nt / kAlign * kAlign;
    if (a >= e) return;
    if (gelu) geglu(&ff_a_[a], &ff_b_[a], &ff_a_[a], e - a);
    else kernels::swiglu(&ff_a_[a], &ff_b_[a], &ff_a_[a], e - a);
  };
  kernels::matmul_shared_input(gate_up, 2, xn_.data(), E, n, pool_, mm_, &activate);
  clock_.mark(StepProfile::kFfnIn);
  kernels::matmul(lw.ffn_down, ff_a_.data(), ff, n, xn_.data(), E, pool_, mm_);
  for_tokens(n, [&](int i) {
    float* y = &xn_[i * E];
    if (l.post_norms) kernels::rms_norm(y, lw.post_ffn_norm.data(), y, c.n_embd, c.rms_eps);
    kernels::add_inplace(&x_[i * E], y, E);
  });
  clock_.mark(StepProfile::kFfnDown);
}

}  // namespace oscar::runtime
