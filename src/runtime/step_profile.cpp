#include "runtime/step_profile.h"

namespace oscar::runtime {

const char* StepProfile::name(Piece p) {
  switch (p) {
    case kAttnIn: return "attn_in";
    case kAttention: return "attention";
    case kAttnOut: return "attn_out";
    case kFfnIn: return "ffn_in";
    case kFfnDown: return "ffn_down";
    case kLogits: return "logits";
    case kOther: return "other";
    case kCount: break;
  }
  return "?";
}

double StepProfile::total_seconds() const {
  double s = 0;
  for (double x : seconds) s += x;
  return s;
}

std::array<double, StepProfile::kCount> piece_weight_bytes(const model::Model& m) {
  auto bytes = [](const kernels::WeightMatrix& w) { return w.data ? (double)w.rows * (double)w.row_bytes : 0.0; };
  std::array<double, StepProfile::kCount> b{};
  for (const model::LayerWeights& l : m.weights().layers) {
    b[StepProfile::kAttnIn] += bytes(l.wq) + bytes(l.wk) + bytes(l.wv);
    b[StepProfile::kAttnOut] += bytes(l.wo);
    b[StepProfile::kFfnIn] += bytes(l.ffn_gate) + bytes(l.ffn_up);
    b[StepProfile::kFfnDown] += bytes(l.ffn_down);
  }
  b[StepProfile::kLogits] = bytes(m.weights().output);
  return b;
}

}  // namespace oscar::runtime
