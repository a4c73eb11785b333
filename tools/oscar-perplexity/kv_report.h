// oscar-perplexity --kv-report: where a KV cache setting loses precision,
// layer by layer, as two signal-to-noise ratios against an exact reference.
//
// Definition. Per layer L, teacher-forced: the reference attention of layer
// L is computed from the very Q, K, V that the run under test produced at
// layer L (seen through LayerObserver::on_qkv: post-RoPE, before the OSCAR
// rotations), so errors of earlier layers do not compound into the figure of
// L. For every measured query token t (see "Queries" below), every query
// head h (KV head g = h / group) and every key position p the query sees
// (causal; p in (pos - window, pos] on sliding-window layers):
//
//   s_ref(t,h,p) = scale · q(t,h) · k_ref(p,g)           (double arithmetic)
//   s_kv(t,h,p)  = scale · q'(t,h) · k_eng(p,g)
//
// where scale = LayerConfig::kq_scale(), q' is the query as the kernels read
// it (after the K rotation) and k_eng is the key as the kernels read it:
// for p cached before the batch, the cache row decoded by KvCache::read_k
// (rotated, in whatever tier and codec holds it at that moment: f16 sink,
// q2_0 main, f16 recent, ring); for p in the query's own batch, the batch's
// full-precision rotated key. The reference keys k_ref are the observed f32
// keys; with the default reference "f16" (what an f16 cache, the project's
// baseline, would hold) those cached before the batch are rounded to f16,
// those in the batch stay f32 as the engine uses them. "f32" rounds none.
// Rotations are orthogonal, so q'·k' = q·k and the two scores differ only by
// what the cache did to the key. The engine's scores are reconstructed from
// the cache at the moment the layer read it (the observer runs before the
// batch's own rows are stored), which is what the fused kernels score
// against: they read the same bytes and score f32 queries against them.
//
//   score SNR (dB)  = 10·log10( Σ s_ref² / Σ (s_kv − s_ref)² )
//
// summed over all measured (t, h, p). Scores are not mean-centred (softmax
// ignores a per-query constant, but the codec's errors are per key, not a
// shared offset; oscar-calibrate's INT2 score SNR is uncentred too).
//
//   o_ref(t,h)      = Σ_p softmax_p(s_ref(t,h,·)) · v_ref(p,g)  (v_ref like k_ref)
//   o_kv(t,h)       = the engine's attention output of head h, the V rotation
//                     undone, before the output projection
//   output SNR (dB) = 10·log10( Σ |o_ref|² / Σ |o_kv − o_ref|² )
//
// summed over measured tokens, heads and the head dimension; the worst
// query head's own output SNR is reported too. A noise of exactly 0 gives
// +inf (printed "inf", JSON null).
//
// Queries. The caller decides which (sequence, position) queries are
// measured (oscar-perplexity: a sample of the scored positions). Every
// query costs O(keys · n_head · head_dim); keys and values of every position
// are kept per layer and sequence for the reference, in f32 and (reference
// f16) f16-rounded too: 8 (f32) or 16 (f16) bytes per K/V value cached, i.e.
// 8 or 16 · n_layer · n_seq · n_ctx · n_head_kv · head_dim bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model_config.h"
#include "runtime/forward.h"

namespace oscar::ppl {

enum class KvRefType { F16, F32 };
KvRefType parse_kv_ref_type(const std::string& s);  // "f16" | "f32"; throws Error otherwise
const char* kv_ref_type_name(KvRefType t);

// 10·log10(signal / noise); +inf when noise is 0, and when both are 0.
double snr_db(double signal, double noise);

// The sums of one layer.
struct LayerQuality {
  int layer = 0;
  std::string type_k, type_v;  // cache type of the layer's stores ("q2_0", "f16 ring", ...)
  long long n_queries = 0;     // query tokens measured
  long long n_scores = 0;      // (token, head, key) pairs
  double score_signal = 0, score_noise = 0;
  double out_signal = 0, out_noise = 0;
  std::vector<double> head_signal, head_noise;  // output sums per query head

  double score_snr_db() const { return snr_db(score_signal, score_noise); }
  double out_snr_db() const { return snr_db(out_signal, out_noise); }
  double worst_head_out_snr_db() const;  // min over query heads; +inf when none measured
};

class KvReport : public runtime::LayerObserver {
 public:
  // measure(seq, pos): whether the query of that token is measured.
  // pool (optional) spreads the per-query work.
  KvReport(const model::ModelConfig& c, KvRefType ref, std::function<bool(int, int)> measure,
           ThreadPool* pool = nullptr);

  void on_qkv(int layer, const model::LayerConfig& l, int n, const int32_t* seq, const int32_t* pos,
              const float* q, const float* k, const float* v) override;
  void on_attention(int layer, const model::LayerConfig& l, const runtime::AttentionView& a) override;

  KvRefType ref() const { return ref_; }
  const std::vector<LayerQuality>& layers() const { return layers_; }
  LayerQuality total() const;  // all layers summed (layer = -1)

  // The table oscar-perplexity prints, and its JSON form. `setting` is one
  // line describing the KV setting (printed above the table / stored as is).
  std::string table(const std::string& setting) const;
  std::string json(const std::string& setting) const;

 private:
  struct History {  // one layer, one sequence: K and V of positions [0, n)
    int n = 0;
    std::vector<float> k, v;      // (n, n_head_kv*hd)
    std::vector<float> k16, v16;  // the same rounded to f16 (reference f16 only)
  };
  History& history(int layer, int seq);

  const model::ModelConfig& c_;
  KvRefType ref_;
  std::function<bool(int, int)> measure_;
  ThreadPool* pool_;
  std::vector<std::vector<History>> hist_;  // [layer][seq]
  std::vector<float> q_;                    // (n, n_head*hd) of the layer last seen by on_qkv
  int q_layer_ = -1;
  std::vector<LayerQuality> layers_;
};

}  // namespace oscar::ppl
