#include "calib/calibrator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "calib/head_stats.h"
#include "calib/score_snr.h"
#include "core/error.h"
#include "kv/kv_cache.h"
#include "runtime/forward.h"

namespace oscar::calib {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Routes every layer's rows to the current pass's accumulator and times it.
class PassObserver : public runtime::LayerObserver {
 public:
  using Fn = std::function<void(int layer, int n, const int32_t* pos, const float* q, const float* k, const float* v)>;
  explicit PassObserver(Fn fn) : fn_(std::move(fn)) {}
  void on_qkv(int layer, const model::LayerConfig&, int n, const int32_t*, const int32_t* pos, const float* q,
              const float* k, const float* v) override {
    const auto t0 = Clock::now();
    fn_(layer, n, pos, q, k, v);
    seconds += since(t0);
  }
  double seconds = 0;

 private:
  Fn fn_;
};

// Evaluates every sequence (one at a time, in physical batches) with the
// observer attached; returns the wall time of the evals.
double run_pass(const model::Model& model, ThreadPool& pool, const std::vector<std::vector<int32_t>>& seqs,
                int n_ubatch, runtime::LayerObserver& obs, const std::string& label, const Progress& progress) {
  size_t longest = 0, total = 0;
  for (const auto& s : seqs) {
    longest = std::max(longest, s.size());
    total += s.size();
  }
  kv::KvCacheConfig kc;
  kc.n_seq = 1;
  kc.n_ctx_seq = (int)longest;
  kv::KvCache cache(model.config(), kc, model.quant_table());
  runtime::ForwardOptions opts;
  opts.observer = &obs;
  runtime::Forward fwd(model, cache, pool, opts);
  const auto t0 = Clock::now();
  size_t done = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    cache.clear(0);
    const auto& s = seqs[i];
    for (size_t b = 0; b < s.size(); b += (size_t)n_ubatch) {
      const size_t e = std::min(s.size(), b + (size_t)n_ubatch);
      std::vector<runtime::BatchToken> batch;
      batch.reserve(e - b);
      for (size_t j = b; j < e; ++j) batch.push_back({s[j], 0, (int32_t)j, false});
      fwd.eval(batch);
    }
    done += s.size();
    // About ten lines per pass, however many sequences.
    const bool report = i + 1 == seqs.size() || (i + 1) * 10 / seqs.size() != i * 10 / seqs.size();
    if (progress && report) {
      const double t = since(t0);
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: sequence %zu/%zu, %zu/%zu tokens, %.1f tokens/s", label.c_str(), i + 1,
                    seqs.size(), done, total, done / std::max(t, 1e-9));
      progress(buf);
    }
  }
  return since(t0);
}

}  // namespace

CalibrationResult calibrate(const model::Model& model, ThreadPool& pool,
                            const std::vector<std::vector<int32_t>>& calib,
                            const std::vector<std::vector<int32_t>>& heldout, const CalibrationConfig& cfg,
                            const Progress& progress) {
  const model::ModelConfig& mc = model.config();
  require(mc.n_layer > 0 && (int)mc.layers.size() == mc.n_layer, "the model has no layers to calibrate");
  require(cfg.n_ubatch > 0 && cfg.snr_ubatch > 0, "batch sizes must be positive");
  CalibrationResult res;
  for (const auto& s : calib) res.calib_tokens += (long long)s.size();
  for (const auto& s : heldout) res.heldout_tokens += (long long)s.size();
  require(res.calib_tokens > 0, "no calibration tokens");
  for (int il = 0; il < mc.n_layer; ++il) {
    const HeadShape hs = HeadShape::of(mc.layers[(size_t)il]);
    check_shape(hs, il);
    bit_reversal(hs.head_dim);  // refuses a head dim that is not a power of two, before any work
  }

  std::vector<QueryStats> qs;
  for (int il = 0; il < mc.n_layer; ++il) qs.emplace_back(HeadShape::of(mc.layers[(size_t)il]));
  PassObserver p1([&](int il, int n, const int32_t*, const float* q, const float*, const float*) {
    qs[(size_t)il].add(n, q, &pool);
  });
  const double w1 = run_pass(model, pool, calib, cfg.n_ubatch, p1, "pass 1/2 (query covariance)", progress);

  std::vector<ValueStats> vs;
  for (const QueryStats& q : qs) vs.emplace_back(q);
  PassObserver p2([&](int il, int n, const int32_t*, const float*, const float* k, const float* v) {
    vs[(size_t)il].add(n, k, v, &pool);
  });
  const double w2 = run_pass(model, pool, calib, cfg.n_ubatch, p2, "pass 2/2 (score-weighted value covariance)",
                             progress);
  res.t_stats = p1.seconds + p2.seconds;
  res.t_forward = w1 + w2 - res.t_stats;

  const auto te = Clock::now();
  res.k.resize((size_t)mc.n_layer);
  res.v.resize((size_t)mc.n_layer);
  pool.parallel_for((size_t)mc.n_layer * 2, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const size_t il = i / 2;
      try {
        if (i % 2 == 0) res.k[il] = rotation_from_covariance(qs[il].c_k());
        else res.v[il] = rotation_from_covariance(vs[il].c_v());
      } catch (const Error& err) {
        throw Error("layer " + std::to_string(il) + (i % 2 ? " V: " : " K: ") + err.what());
      }
    }
  });
  res.t_eigen = since(te);
  if (progress) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "eigendecompositions: %d layers x 2 in %.2f s", mc.n_layer, res.t_eigen);
    progress(buf);
  }

  if (res.heldout_tokens > 0) {
    std::vector<ScoreSnr> snr;
    for (int il = 0; il < mc.n_layer; ++il) {
      const HeadShape hs = HeadShape::of(mc.layers[(size_t)il]);
      const int d = hs.head_dim;
      std::vector<float> h((size_t)d * d);
      const Eigen::MatrixXd hm = hadamard(d);
      for (int r = 0; r < d; ++r)
        for (int c = 0; c < d; ++c) h[(size_t)r * d + c] = (float)hm(r, c);
      // The GGUF/runtime form of a checkpoint's M is W = Mᵀ (x' = W·x).
      std::vector<float> w((size_t)d * d);
      const std::vector<float>& m = res.k[(size_t)il].m;
      for (int r = 0; r < d; ++r)
        for (int c = 0; c < d; ++c) w[(size_t)r * d + c] = m[(size_t)c * d + r];
      snr.emplace_back(hs, std::vector<SnrMode>{{"none", {}}, {"hadamard", h}, {"calibrated", w}}, cfg.snr_q2,
                       kv::Q2Encoder(model.quant_table().cpu()));
    }
    PassObserver p3([&](int il, int n, const int32_t* pos, const float* q, const float* k, const float*) {
      snr[(size_t)il].add(n, pos, q, k, &pool);
    });
    const double w3 = run_pass(model, pool, heldout, cfg.snr_ubatch, p3, "SNR pass (held-out)", progress);
    res.t_snr_stats = p3.seconds;
    res.t_snr_forward = w3 - p3.seconds;
    for (const ScoreSnr& s : snr) res.snr.push_back({s.snr_db(0), s.snr_db(1), s.snr_db(2)});
  }
  return res;
}

}  // namespace oscar::calib
