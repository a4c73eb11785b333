// Turning calibration text into token sequences: the calibration set (the
// head of the text, up to a token budget) and the held-out set for the SNR
// report (a separate text, or the tail of the same one), each cut into
// sequences of at most `ctx` positions, every sequence starting with BOS when
// the vocabulary asks for one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oscar::calibtool {

struct SplitSettings {
  int ctx = 2048;           // positions per sequence (BOS included)
  long long tokens = 0;     // calibration token budget; 0: all there is
  int snr_tokens = 512;     // held-out tokens; 0: no SNR report
  bool separate_heldout = false;  // held-out tokens come from their own text
  int min_tokens = 0;       // fewest calibration tokens accepted
  int32_t bos = -1;         // prepended to every sequence when >= 0
};

struct Split {
  std::vector<std::vector<int32_t>> calib, heldout;
  long long calib_tokens = 0, heldout_tokens = 0;  // text tokens (BOS not counted)
};

// `text` are the calibration text's tokens, `heldout` the held-out text's
// (used only when s.separate_heldout). Throws oscar::Error saying how many
// tokens there are and how many are needed when there are too few.
Split split_tokens(const std::vector<int32_t>& text, const std::vector<int32_t>& heldout, const SplitSettings& s);

}  // namespace oscar::calibtool
