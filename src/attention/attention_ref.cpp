#include "attention/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"

namespace oscar::attention {

void attend_reference(const model::LayerConfig& layer, int layer_index, const kv::KvCache& cache,
            const BatchView& b, float* out, ThreadPool& pool) {
  const int hd = layer.head_dim;
  const int n_kv = layer.n_head_kv;
  const int group = layer.n_head / layer.n_head_kv;
  const int q_width = layer.n_head * hd, kv_width = n_kv * hd;
  const float scale = layer.kq_scale();

  // One work item = (token, KV head): every query head of the GQA group
  // shares each K and V row it decodes.
  pool.parallel_for((size_t)b.n_tokens * n_kv, 1, [&](size_t begin, size_t end) {
    std::vector<float> row((size_t)hd), scores;
    std::vector<int> batch_keys;
    for (size_t item = begin; item < end; ++item) {
      const int t = (int)(item / n_kv), g = (int)(item % n_kv);
      const int seq = b.seq[t], pos = b.pos[t], n_cached = b.n_cached[t];
      const int lo = window_start(layer, pos);  // first visible position
      const int c0 = std::min(lo, n_cached), n_old = n_cached - c0;
      // Batch tokens of the same sequence at or before this position.
      batch_keys.clear();
      for (int j = 0; j < b.n_tokens; ++j)
        if (b.seq[j] == seq && b.pos[j] <= pos && b.pos[j] >= std::max(n_cached, lo)) batch_keys.push_back(j);
      const int n_keys = n_old + (int)batch_keys.size();
      scores.assign((size_t)group * n_keys, 0.0f);
      const float* q0 = b.q + (size_t)t * q_width + (size_t)g * group * hd;
      for (int p = c0; p < n_cached; ++p) {
        cache.read_k(seq, layer_index, g, p, row.data());
        for (int h = 0; h < group; ++h)
          scores[(size_t)h * n_keys + (p - c0)] = kernels::dot_f32(q0 + h * hd, row.data(), hd) * scale;
      }
      for (size_t j = 0; j < batch_keys.size(); ++j) {
        const float* kr = b.k + (size_t)batch_keys[j] * kv_width + (size_t)g * hd;
        for (int h = 0; h < group; ++h)
          scores[(size_t)h * n_keys + n_old + j] = kernels::dot_f32(q0 + h * hd, kr, hd) * scale;
      }
      for (int h = 0; h < group; ++h) kernels::softmax(&scores[(size_t)h * n_keys], n_keys);
      float* o0 = out + (size_t)t * q_width + (size_t)g * group * hd;
      for (int h = 0; h < group; ++h)
        for (int i = 0; i < hd; ++i) o0[h * hd + i] = 0.0f;
      for (int p = c0; p < n_cached; ++p) {
        cache.read_v(seq, layer_index, g, p, row.data());
        for (int h = 0; h < group; ++h)
          kernels::axpy(scores[(size_t)h * n_keys + (p - c0)], row.data(), o0 + h * hd, hd);
      }
      for (size_t j = 0; j < batch_keys.size(); ++j) {
        const float* vr = b.v + (size_t)batch_keys[j] * kv_width + (size_t)g * hd;
        for (int h = 0; h < group; ++h)
          kernels::axpy(scores[(size_t)h * n_keys + n_old + j], vr, o0 + h * hd, hd);
      }
    }
  });
}

}  // namespace oscar::attention
