#include "ppl_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace oscar::ppl {

namespace {

double log_sum_exp(std::span<const float> x) {
  float mx = -std::numeric_limits<float>::infinity();
  for (float v : x) mx = std::max(mx, v);
  if (!std::isfinite(mx)) return mx;  // all -inf (or a +inf/NaN that the caller will see)
  double s = 0;
  for (float v : x) s += std::exp((double)v - (double)mx);
  return (double)mx + std::log(s);
}

// Sample variance helper: mean of squares minus square of mean, clamped.
double var_of(double sum, double sum2, double n) {
  if (n <= 0) return 0;
  const double m = sum / n;
  return std::max(0.0, sum2 / n - m * m);
}

}  // namespace

void log_softmax(std::span<const float> logits, std::span<float> out) {
  require(out.size() == logits.size(), "log_softmax: size mismatch");
  const double lse = log_sum_exp(logits);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = (float)((double)logits[i] - lse);
}

double PplAccumulator::ppl() const { return std::exp(mean_nll()); }

double PplAccumulator::ppl_error() const {
  if (count_ < 2) return 0;
  const double v = var_of(sum_, sum2_, (double)count_);
  return ppl() * std::sqrt(v / (double)(count_ - 1));
}

int argmax(std::span<const float> v) {
  int best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[(size_t)best]) best = (int)i;
  return best;
}

KldPoint compare(std::span<const float> logp_base, std::span<const float> logp_cur) {
  require(logp_base.size() == logp_cur.size() && !logp_base.empty(), "compare: size mismatch");
  const double lse_b = log_sum_exp(logp_base), lse_c = log_sum_exp(logp_cur);
  double kld = 0;
  for (size_t i = 0; i < logp_base.size(); ++i) {
    const double lb = (double)logp_base[i] - lse_b;
    const double p = std::exp(lb);
    if (p == 0) continue;  // also skips -inf entries, whose 0 * (-inf) would be NaN
    kld += p * (lb - ((double)logp_cur[i] - lse_c));
  }
  return {kld, argmax(logp_base) == argmax(logp_cur)};
}

double quantile_sorted(const std::vector<double>& s, double p) {
  if (s.empty()) return 0;
  const double x = std::clamp(p, 0.0, 1.0) * (double)(s.size() - 1);
  const size_t lo = (size_t)std::floor(x);
  const size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (x - (double)lo);
}

void KldSummary::add(double nll_base, double nll_cur, const KldPoint& p) {
  kld_.push_back(p.kld);
  nll_base_.push_back(nll_base);
  nll_cur_.push_back(nll_cur);
  n_same_ += p.same_top ? 1 : 0;
}

KldSummary::Report KldSummary::report() const {
  Report r;
  r.n = count();
  if (r.n == 0) return r;
  const double n = (double)r.n;
  const double dof = std::max(1.0, n - 1);
  double sb = 0, sb2 = 0, sc = 0, sc2 = 0, sbc = 0, sd = 0, sd2 = 0, sk = 0, sk2 = 0;
  for (size_t i = 0; i < kld_.size(); ++i) {
    const double b = nll_base_[i], c = nll_cur_[i], d = c - b, k = kld_[i];
    sb += b, sb2 += b * b, sc += c, sc2 += c * c, sbc += b * c;
    sd += d, sd2 += d * d, sk += k, sk2 += k * k;
  }
  const double vb = var_of(sb, sb2, n), vc = var_of(sc, sc2, n);
  const double cov = sbc / n - (sb / n) * (sc / n);
  r.ppl_base = std::exp(sb / n);
  r.ppl_cur = std::exp(sc / n);
  r.ppl_base_err = r.ppl_base * std::sqrt(vb / dof);
  r.ppl_cur_err = r.ppl_cur * std::sqrt(vc / dof);
  r.corr = (vb > 0 && vc > 0) ? cov / std::sqrt(vb * vc) : 1.0;
  r.ln_ratio = sd / n;
  r.ln_ratio_err = std::sqrt(var_of(sd, sd2, n) / dof);
  r.ratio = std::exp(r.ln_ratio);
  r.ratio_err = r.ratio * r.ln_ratio_err;
  r.delta = r.ppl_cur - r.ppl_base;
  // Delta method on exp(mean nll) for both, with their covariance.
  const double vd = (r.ppl_cur * r.ppl_cur * vc + r.ppl_base * r.ppl_base * vb -
                     2 * r.ppl_cur * r.ppl_base * cov) / dof;
  r.delta_err = std::sqrt(std::max(0.0, vd));
  r.kld_mean = sk / n;
  r.kld_err = std::sqrt(var_of(sk, sk2, n) / dof);
  std::vector<double> s = kld_;
  std::sort(s.begin(), s.end());
  r.kld_min = s.front();
  r.kld_max = s.back();
  r.kld_p999 = quantile_sorted(s, 0.999);
  r.kld_p99 = quantile_sorted(s, 0.99);
  r.kld_p95 = quantile_sorted(s, 0.95);
  r.kld_p90 = quantile_sorted(s, 0.90);
  r.kld_median = quantile_sorted(s, 0.5);
  r.kld_p10 = quantile_sorted(s, 0.10);
  r.kld_p05 = quantile_sorted(s, 0.05);
  r.kld_p01 = quantile_sorted(s, 0.01);
  r.same_top = (double)n_same_ / n;
  r.same_top_err = std::sqrt(r.same_top * (1 - r.same_top) / dof);
  return r;
}

std::string format_report(const KldSummary::Report& r) {
  char buf[4096];
  std::snprintf(buf, sizeof(buf),
                "====== Perplexity statistics ======\n"
                "Scored tokens                 : %lld\n"
                "Mean PPL(Q)                   : %10.6f ± %10.6f\n"
                "Mean PPL(base)                : %10.6f ± %10.6f\n"
                "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n"
                "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n"
                "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n"
                "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n"
                "\n"
                "====== KL divergence statistics ======\n"
                "Mean    KLD: %12.8f ± %12.8f\n"
                "Maximum KLD: %12.8f\n"
                "99.9%%   KLD: %12.8f\n"
                "99.0%%   KLD: %12.8f\n"
                "95.0%%   KLD: %12.8f\n"
                "90.0%%   KLD: %12.8f\n"
                "Median  KLD: %12.8f\n"
                "10.0%%   KLD: %12.8f\n"
                " 5.0%%   KLD: %12.8f\n"
                " 1.0%%   KLD: %12.8f\n"
                "Minimum KLD: %12.8f\n"
                "\n"
                "====== Token probability statistics ======\n"
                "Same top p: %7.3f ± %5.3f %%\n",
                (long long)r.n, r.ppl_cur, r.ppl_cur_err, r.ppl_base, r.ppl_base_err, 100 * r.corr, r.ln_ratio,
                r.ln_ratio_err, r.ratio, r.ratio_err, r.delta, r.delta_err, r.kld_mean, r.kld_err, r.kld_max,
                r.kld_p999, r.kld_p99, r.kld_p95, r.kld_p90, r.kld_median, r.kld_p10, r.kld_p05, r.kld_p01,
                r.kld_min, 100 * r.same_top, 100 * r.same_top_err);
  return buf;
}

}  // namespace oscar::ppl
