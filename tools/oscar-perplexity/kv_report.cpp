#include "kv_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/fp16.h"
#include "kv/cache_type.h"

namespace oscar::ppl {

KvRefType parse_kv_ref_type(const std::string& s) {
  if (s == "f16") return KvRefType::F16;
  if (s == "f32") return KvRefType::F32;
  throw Error("--kv-report-ref: expected f16 or f32, got '" + s + "'");
}

const char* kv_ref_type_name(KvRefType t) { return t == KvRefType::F16 ? "f16" : "f32"; }

double snr_db(double signal, double noise) {
  if (noise <= 0) return std::numeric_limits<double>::infinity();
  if (signal <= 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

double LayerQuality::worst_head_out_snr_db() const {
  double w = std::numeric_limits<double>::infinity();
  for (size_t h = 0; h < head_signal.size(); ++h) w = std::min(w, snr_db(head_signal[h], head_noise[h]));
  return w;
}

KvReport::KvReport(const model::ModelConfig& c, KvRefType ref, std::function<bool(int, int)> measure,
                   ThreadPool* pool)
    : c_(c), ref_(ref), measure_(std::move(measure)), pool_(pool) {
  hist_.resize((size_t)c.n_layer);
  layers_.resize((size_t)c.n_layer);
  for (int il = 0; il < c.n_layer; ++il) {
    LayerQuality& q = layers_[(size_t)il];
    q.layer = il;
    q.head_signal.assign((size_t)c.layers[(size_t)il].n_head, 0.0);
    q.head_noise.assign((size_t)c.layers[(size_t)il].n_head, 0.0);
  }
}

KvReport::History& KvReport::history(int layer, int seq) {
  auto& per_seq = hist_[(size_t)layer];
  require(seq >= 0, "kv-report: negative sequence id");
  if ((size_t)seq >= per_seq.size()) per_seq.resize((size_t)seq + 1);
  return per_seq[(size_t)seq];
}

void KvReport::on_qkv(int layer, const model::LayerConfig& l, int n, const int32_t* seq, const int32_t* pos,
                      const float* q, const float* k, const float* v) {
  const size_t qw = (size_t)l.n_head * l.head_dim, kvw = (size_t)l.n_head_kv * l.head_dim;
  q_.assign(q, q + (size_t)n * qw);
  q_layer_ = layer;
  for (int i = 0; i < n; ++i) {
    History& h = history(layer, seq[i]);
    if (pos[i] == 0) h.n = 0;  // a new sequence in this slot
    require(pos[i] == h.n, "kv-report: layer " + std::to_string(layer) + " sequence " + std::to_string(seq[i]) +
                               " expected position " + std::to_string(h.n) + ", got " + std::to_string(pos[i]));
    h.k.resize((size_t)(h.n + 1) * kvw);
    h.v.resize((size_t)(h.n + 1) * kvw);
    std::copy(k + (size_t)i * kvw, k + (size_t)(i + 1) * kvw, h.k.begin() + (long)((size_t)h.n * kvw));
    std::copy(v + (size_t)i * kvw, v + (size_t)(i + 1) * kvw, h.v.begin() + (long)((size_t)h.n * kvw));
    if (ref_ == KvRefType::F16) {
      h.k16.resize((size_t)(h.n + 1) * kvw);
      h.v16.resize((size_t)(h.n + 1) * kvw);
      for (size_t c = 0; c < kvw; ++c) {
        h.k16[(size_t)h.n * kvw + c] = fp16_to_f32(f32_to_fp16(k[(size_t)i * kvw + c]));
        h.v16[(size_t)h.n * kvw + c] = fp16_to_f32(f32_to_fp16(v[(size_t)i * kvw + c]));
      }
    }
    ++h.n;
  }
}

namespace {

std::string type_label(const kv::TierStore& s) {
  std::string t = kv::cache_type_name(s.main_codec().type());
  if (s.ring() > 0) t += " ring";
  return t;
}

double dot(const float* a, const float* b, int d) {
  double s = 0;
  for (int i = 0; i < d; ++i) s += (double)a[i] * (double)b[i];
  return s;
}

// The sums of one (token, KV head) item.
struct Partial {
  double score_signal = 0, score_noise = 0;
  long long n_scores = 0;
  std::vector<double> head_signal, head_noise;  // per query head of the group
};

// The output side of one item: for each of the group's heads, the softmax of
// its reference scores s_ref (group, n_keys) over the reference values
// vref (n_keys, hd) in double, against the engine's output out (group, hd).
void output_quality(std::vector<double>& s_ref, const std::vector<float>& vref, const float* out, int group,
                    int n_keys, int hd, Partial& P) {
  std::vector<double> o((size_t)hd);
  for (int h = 0; h < group; ++h) {
    double* s = &s_ref[(size_t)h * n_keys];
    const double mx = *std::max_element(s, s + n_keys);
    double sum = 0;
    for (int p = 0; p < n_keys; ++p) sum += (s[p] = std::exp(s[p] - mx));
    std::fill(o.begin(), o.end(), 0.0);
    for (int p = 0; p < n_keys; ++p) {
      const double w = s[p] / sum;
      const float* vr = &vref[(size_t)p * hd];
      for (int i = 0; i < hd; ++i) o[(size_t)i] += w * vr[i];
    }
    const float* oe = out + (size_t)h * hd;
    for (int i = 0; i < hd; ++i) {
      P.head_signal[(size_t)h] += o[(size_t)i] * o[(size_t)i];
      const double e = (double)oe[i] - o[(size_t)i];
      P.head_noise[(size_t)h] += e * e;
    }
  }
}

// Adds the items' sums (item = token * n_kv + KV head) to the layer's, in
// item order: the report does not depend on the thread count.
void add_partials(const std::vector<Partial>& parts, int n_kv, int group, LayerQuality& lq) {
  for (size_t it = 0; it < parts.size(); ++it) {
    const Partial& P = parts[it];
    const int g = (int)(it % (size_t)n_kv);
    lq.score_signal += P.score_signal;
    lq.score_noise += P.score_noise;
    lq.n_scores += P.n_scores;
    for (int h = 0; h < group; ++h) {
      lq.head_signal[(size_t)(g * group + h)] += P.head_signal[(size_t)h];
      lq.head_noise[(size_t)(g * group + h)] += P.head_noise[(size_t)h];
      lq.out_signal += P.head_signal[(size_t)h];
      lq.out_noise += P.head_noise[(size_t)h];
    }
  }
}

}  // namespace

void KvReport::on_attention(int layer, const model::LayerConfig& l, const runtime::AttentionView& a) {
  require(q_layer_ == layer, "kv-report: on_attention for layer " + std::to_string(layer) +
                                 " without its on_qkv");
  LayerQuality& lq = layers_[(size_t)layer];
  if (lq.type_k.empty()) {
    lq.type_k = type_label(a.cache->k_store(layer));
    lq.type_v = type_label(a.cache->v_store(layer));
  }
  const int hd = l.head_dim, n_kv = l.n_head_kv, group = l.n_head / l.n_head_kv;
  const size_t qw = (size_t)l.n_head * hd, kvw = (size_t)n_kv * hd;
  const double scale = l.kq_scale();
  const bool round_f16 = ref_ == KvRefType::F16;

  std::vector<int> tokens;
  for (int i = 0; i < a.n; ++i)
    if (measure_(a.seq[i], a.pos[i])) tokens.push_back(i);
  if (tokens.empty()) return;
  for (int i : tokens) history(layer, a.seq[i]);  // (the vector of sequences must not grow below)

  std::vector<Partial> parts(tokens.size() * (size_t)n_kv);
  auto work = [&](size_t item) {
    const int t = tokens[item / (size_t)n_kv], g = (int)(item % (size_t)n_kv);
    const int seq = a.seq[t], pos = a.pos[t], n_cached = a.n_cached[t];
    const History& hs = hist_[(size_t)layer][(size_t)seq];
    // Keys the query sees: (pos - window, pos] on sliding layers, else [0, pos].
    const int lo = l.sliding_window > 0 ? std::max(0, pos - l.sliding_window + 1) : 0;
    const int n_keys = pos - lo + 1;
    // Batch index of each key of this sequence in the batch.
    std::vector<int> in_batch((size_t)n_keys, -1);
    for (int j = 0; j < a.n; ++j)
      if (a.seq[j] == seq && a.pos[j] >= lo && a.pos[j] <= pos) in_batch[(size_t)(a.pos[j] - lo)] = j;
    Partial& P = parts[item];
    P.head_signal.assign((size_t)group, 0.0);
    P.head_noise.assign((size_t)group, 0.0);
    std::vector<double> s_ref((size_t)group * n_keys);
    std::vector<float> vref_all((size_t)n_keys * hd), eng((size_t)hd);
    for (int p = lo; p <= pos; ++p) {
      const int j = in_batch[(size_t)(p - lo)];
      const bool cached = p < n_cached;
      require(cached || j >= 0, "kv-report: key position " + std::to_string(p) + " of sequence " +
                                    std::to_string(seq) + " is neither cached nor in the batch");
      require(p < hs.n, "kv-report: no observed key for position " + std::to_string(p));
      // Reference rows: f16-rounded when cached (reference f16), else f32.
      const bool r16 = cached && round_f16;
      const size_t off = (size_t)p * kvw + (size_t)g * hd;
      const float* kref = r16 ? &hs.k16[off] : &hs.k[off];
      const float* vr = r16 ? &hs.v16[off] : &hs.v[off];
      std::copy(vr, vr + hd, &vref_all[(size_t)(p - lo) * hd]);
      const float* ke;
      if (cached) {
        a.cache->read_k(seq, layer, g, p, eng.data());
        ke = eng.data();
      } else {
        ke = a.k + (size_t)j * kvw + (size_t)g * hd;
      }
      for (int h = 0; h < group; ++h) {
        const size_t qo = (size_t)t * qw + (size_t)(g * group + h) * hd;
        const double sr = scale * dot(&q_[qo], kref, hd);
        const double se = scale * dot(a.q + qo, ke, hd);
        s_ref[(size_t)h * n_keys + (p - lo)] = sr;
        P.score_signal += sr * sr;
        P.score_noise += (se - sr) * (se - sr);
      }
    }
    P.n_scores = (long long)group * n_keys;
    output_quality(s_ref, vref_all, a.out + (size_t)t * qw + (size_t)g * group * hd, group, n_keys, hd, P);
  };
  if (pool_ && pool_->size() > 1)
    pool_->parallel_for(parts.size(), 1, [&](size_t b, size_t e) {
      for (size_t it = b; it < e; ++it) work(it);
    });
  else
    for (size_t it = 0; it < parts.size(); ++it) work(it);

  lq.n_queries += (long long)tokens.size();
  add_partials(parts, n_kv, group, lq);
}

LayerQuality KvReport::total() const {
  LayerQuality t;
  t.layer = -1;
  for (const LayerQuality& l : layers_) {
    t.n_queries += l.n_queries;
    t.n_scores += l.n_scores;
    t.score_signal += l.score_signal;
    t.score_noise += l.score_noise;
    t.out_signal += l.out_signal;
    t.out_noise += l.out_noise;
  }
  return t;
}

namespace {

std::string fmt_db(double x, int width) {
  char b[64];
  if (std::isinf(x)) std::snprintf(b, sizeof b, "%*s", width, x > 0 ? "inf" : "-inf");
  else std::snprintf(b, sizeof b, "%*.2f", width, x);
  return b;
}

std::string json_db(double x) {
  if (!std::isfinite(x)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6f", x);
  return b;
}

std::string json_num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (const char ch : s) {
    const unsigned char c = (unsigned char)ch;
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

}  // namespace

std::string KvReport::table(const std::string& setting) const {
  std::string o = "KV report: " + setting + "\n";
  o += "reference: " + std::string(kv_ref_type_name(ref_)) +
       " K/V (teacher-forced per layer); SNR = 10 log10(sum ref^2 / sum (kv - ref)^2)\n";
  o += "layer  K           V           queries  score SNR dB  output SNR dB  worst head dB\n";
  char line[256];
  auto row = [&](const std::string& name, const LayerQuality& q, const std::string& tk, const std::string& tv) {
    std::snprintf(line, sizeof line, "%5s  %-10s  %-10s  %7lld  %s  %s  %s\n", name.c_str(), tk.c_str(), tv.c_str(),
                  q.n_queries, fmt_db(q.score_snr_db(), 12).c_str(), fmt_db(q.out_snr_db(), 13).c_str(),
                  fmt_db(q.worst_head_out_snr_db(), 13).c_str());
    o += line;
  };
  for (const LayerQuality& q : layers_) {
    if (q.n_queries == 0) continue;
    row(std::to_string(q.layer), q, q.type_k, q.type_v);
  }
  LayerQuality t = total();
  t.head_signal = {t.out_signal};  // "worst head" of the total: the total itself is not per head
  t.head_noise = {t.out_noise};
  std::snprintf(line, sizeof line, "%5s  %-10s  %-10s  %7s  %s  %s\n", "all", "", "", "",
                fmt_db(t.score_snr_db(), 12).c_str(), fmt_db(t.out_snr_db(), 13).c_str());
  o += line;
  return o;
}

std::string KvReport::json(const std::string& setting) const {
  std::string o = "{\n  \"setting\": " + json_str(setting) + ",\n  \"reference\": " +
                  json_str(kv_ref_type_name(ref_)) + ",\n  \"layers\": [";
  bool first = true;
  for (const LayerQuality& q : layers_) {
    if (q.n_queries == 0) continue;
    o += first ? "\n" : ",\n";
    first = false;
    o += "    {\"layer\": " + std::to_string(q.layer) + ", \"type_k\": " + json_str(q.type_k) +
         ", \"type_v\": " + json_str(q.type_v) + ", \"n_queries\": " + std::to_string(q.n_queries) +
         ", \"n_scores\": " + std::to_string(q.n_scores) + ", \"score_snr_db\": " + json_db(q.score_snr_db()) +
         ", \"out_snr_db\": " + json_db(q.out_snr_db()) +
         ", \"worst_head_out_snr_db\": " + json_db(q.worst_head_out_snr_db()) +
         ", \"score_signal\": " + json_num(q.score_signal) + ", \"score_noise\": " + json_num(q.score_noise) +
         ", \"out_signal\": " + json_num(q.out_signal) + ", \"out_noise\": " + json_num(q.out_noise) +
         ", \"head_out_snr_db\": [";
    for (size_t h = 0; h < q.head_signal.size(); ++h)
      o += (h ? ", " : "") + json_db(snr_db(q.head_signal[h], q.head_noise[h]));
    o += "]}";
  }
  const LayerQuality t = total();
  o += "\n  ],\n  \"all\": {\"score_snr_db\": " + json_db(t.score_snr_db()) + ", \"out_snr_db\": " +
       json_db(t.out_snr_db()) + "}\n}\n";
  return o;
}

}  // namespace oscar::ppl
