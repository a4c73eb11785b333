// --k-outliers: plants the structure trained LLMs have in their keys into a
// random-weight model, so that KV-cache quantization can be judged on
// attention statistics that are not uniform noise.
//
// Why: in trained LLMs a few channels of K (and of Q) carry values far above
// the rest, with a mostly fixed sign, in the low-frequency RoPE channels
// (which position hardly turns), fed by "massive activations" of a few
// residual-stream channels. A 2-bit row code spends its four levels on those
// few values and loses the rest. A Hadamard spreads each channel over the
// whole row, but N channels become a sum of N Hadamard rows, a row of several
// levels. A calibrated rotation (R·H·P, R from the query covariance) first
// turns the common direction that queries and keys share onto one axis, which
// H spreads into a flat ±c row that two of the four levels hold exactly.
// Random weights have none of this (all rotations come out about equal), so
// such a model cannot rank them. Measured
// (docs/decisions/0016-rotations-calibrated-hadamard-fallback.md): the fixed sign
// shared by Q and K is what calibration exploits. With one planted channel,
// or with channels of random sign, the Hadamard is as good or better.
//
// What is planted (qwen3, qwen2, llama; every layer, every head):
//  - residual channel 0 of every token embedding is set to kMassive (a
//    massive activation: after the attention RMSNorm it is a near-constant
//    input of about kMassive / rms);
//  - N channels of each head, drawn per layer (from the seed) among both
//    members of the d/8 lowest-frequency RoPE pairs (NeoX: (d/2-1, d-1),
//    (d/2-2, d-2), ...; llama: (d-2, d-1), (d-4, d-3), ...), read that
//    channel: each K projection row gets sign·kOffset/x0 on input channel 0
//    (x0: channel 0 after the first RMSNorm), so before the head norm the
//    channel's mean is kOffset (= 3) times its noise. The sign is one per
//    layer and channel, kept by every KV head of the layer and by the same
//    channels of every query head;
//  - their size: after the per-head K norm (qwen3: attn_k_norm.weight of the
//    channel = SCALE / sqrt(kOffset^2 + 1); qwen2/llama: the projection row is
//    scaled by that factor) the channel's RMS is SCALE times that of the
//    other channels. The queries get the same channels and signs at QSCALE,
//    so queries share one direction with the keys and attention is not
//    uniform.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model_spec.h"

namespace oscar::mkmodel {

inline constexpr float kMassive = 8.0f;  // residual channel 0 of every embedding row
inline constexpr float kOffset = 3.0f;   // planted channel mean / noise before the head norm

// Parses "N[,SCALE[,QSCALE]]" into spec (QSCALE defaults to SCALE / 4);
// throws Error naming the problem.
void parse_k_outliers(const std::string& value, ModelSpec& spec);

// The planted channels of layer `layer`'s heads (dim d): N of them, drawn
// from the seed among both members of the d/8 lowest-frequency RoPE pairs.
std::vector<int> outlier_channels(const ModelSpec& spec, int layer, int head_dim);

// The sign (+1 / -1) of planted channel j (index into outlier_channels) in layer i.
float outlier_sign(const ModelSpec& spec, int layer, int j);

// Applies the planted structure to row `row` of tensor `name` (values as
// drawn from its Init); no-op for tensors it does not touch or when
// spec.k_outliers == 0.
void plant_outliers(const ModelSpec& spec, const std::string& name, uint64_t row, std::span<float> values);

}  // namespace oscar::mkmodel
