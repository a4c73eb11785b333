// The arithmetic of oscar-perplexity, kept apart from the tool so tests can
// check it directly: log-softmax, the perplexity estimate with its error
// (llama-perplexity's formulas), and the KL-divergence comparison of a run
// against a base run.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace oscar::ppl {

// out[i] = logits[i] - log(sum_j exp(logits[j])), the sum taken in double
// around the maximum so large logits do not overflow.
void log_softmax(std::span<const float> logits, std::span<float> out);

// Accumulates per-token negative log-likelihoods.
class PplAccumulator {
 public:
  void add(double nll) {
    sum_ += nll;
    sum2_ += nll * nll;
    ++count_;
  }
  int64_t count() const { return count_; }
  double mean_nll() const { return count_ ? sum_ / (double)count_ : 0.0; }
  double ppl() const;
  // Standard error of the PPL estimate (delta method, as llama-perplexity:
  // ppl * sqrt(var(nll) / (count - 1))); 0 with fewer than two tokens.
  double ppl_error() const;

 private:
  double sum_ = 0, sum2_ = 0;
  int64_t count_ = 0;
};

// One scored position compared against the base.
struct KldPoint {
  double kld = 0;      // KL(base || current), nats
  bool same_top = false;  // argmax of both distributions agree
};

// Compares two log-prob vectors over the same vocabulary. Each is first
// renormalised by its own log-sum-exp (stored log-probs may be rounded, which
// would otherwise leak a first-order error into the KLD), then
// KLD = sum_i p_base,i (log p_base,i - log p_cur,i), summed in double.
// Identical inputs give exactly 0. Entries with p_base = 0 contribute 0.
KldPoint compare(std::span<const float> logp_base, std::span<const float> logp_cur);

// Index of the largest value (the first one on ties).
int argmax(std::span<const float> v);

// The p-quantile (0..1) of an ascending `sorted` by linear interpolation
// between order statistics (NumPy's default). 0 when empty.
double quantile_sorted(const std::vector<double>& sorted, double p);

// Everything --kl-divergence reports, accumulated over scored positions.
class KldSummary {
 public:
  void add(double nll_base, double nll_cur, const KldPoint& p);
  int64_t count() const { return (int64_t)kld_.size(); }

  struct Report {
    int64_t n = 0;
    double ppl_base = 0, ppl_base_err = 0;
    double ppl_cur = 0, ppl_cur_err = 0;
    double ln_ratio = 0, ln_ratio_err = 0;  // mean ln(PPL(cur)/PPL(base))
    double ratio = 0, ratio_err = 0;        // PPL(cur)/PPL(base)
    double delta = 0, delta_err = 0;        // PPL(cur) - PPL(base)
    double corr = 0;                        // Pearson correlation of the per-token nlls
    double kld_mean = 0, kld_err = 0;
    double kld_max = 0, kld_p999 = 0, kld_p99 = 0, kld_p95 = 0, kld_p90 = 0, kld_median = 0;
    double kld_p10 = 0, kld_p05 = 0, kld_p01 = 0, kld_min = 0;
    double same_top = 0, same_top_err = 0;  // fraction, 0..1
  };
  Report report() const;

 private:
  std::vector<double> kld_;
  std::vector<double> nll_base_, nll_cur_;
  int64_t n_same_ = 0;
};

// The report as the tool prints it (llama-perplexity's layout).
std::string format_report(const KldSummary::Report& r);

}  // namespace oscar::ppl
