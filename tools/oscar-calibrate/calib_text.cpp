#include "calib_text.h"

#include <algorithm>

#include "core/error.h"

namespace oscar::calibtool {

namespace {

std::vector<std::vector<int32_t>> cut(const int32_t* t, size_t n, const SplitSettings& s) {
  const size_t per = (size_t)s.ctx - (s.bos >= 0 ? 1 : 0);
  std::vector<std::vector<int32_t>> seqs;
  for (size_t i = 0; i < n; i += per) {
    std::vector<int32_t> seq;
    if (s.bos >= 0) seq.push_back(s.bos);
    seq.insert(seq.end(), t + i, t + std::min(n, i + per));
    seqs.push_back(std::move(seq));
  }
  return seqs;
}

}  // namespace

Split split_tokens(const std::vector<int32_t>& text, const std::vector<int32_t>& heldout, const SplitSettings& s) {
  require(s.ctx >= 2, "--ctx must be at least 2");
  require(s.tokens >= 0 && s.snr_tokens >= 0, "--tokens and --snr-tokens must not be negative");
  size_t n_calib = text.size();
  size_t n_held = 0;
  const int32_t* held = nullptr;
  if (s.snr_tokens > 0) {
    if (s.separate_heldout) {
      n_held = std::min(heldout.size(), (size_t)s.snr_tokens);
      require(n_held > 0, "the held-out text tokenizes to nothing");
      held = heldout.data();
    } else {
      // The tail of the text is held out; the calibration set never sees it.
      if (text.size() < (size_t)s.min_tokens + (size_t)s.snr_tokens)
        throw Error("too few tokens: the text has " + std::to_string(text.size()) + ", calibration needs at least " +
                    std::to_string(s.min_tokens) + " plus " + std::to_string(s.snr_tokens) +
                    " held out for the SNR report (give more text, --heldout FILE, or --snr-tokens 0)");
      n_held = (size_t)s.snr_tokens;
      n_calib = text.size() - n_held;
      held = text.data() + n_calib;
    }
  }
  if (s.tokens > 0) n_calib = std::min(n_calib, (size_t)s.tokens);
  if (n_calib < (size_t)s.min_tokens)
    throw Error("too few tokens: " + std::to_string(n_calib) + " calibration tokens, at least " +
                std::to_string(s.min_tokens) + " are needed (the largest head dim: fewer cannot determine a " +
                "full covariance)");
  Split out;
  out.calib = cut(text.data(), n_calib, s);
  out.calib_tokens = (long long)n_calib;
  if (n_held) {
    out.heldout = cut(held, n_held, s);
    out.heldout_tokens = (long long)n_held;
  }
  return out;
}

}  // namespace oscar::calibtool
