// Baking OSCAR rotations into a GGUF: OUT = BASE (all metadata and tensors
// copied byte for byte, streamed) + per-layer rotation tensors
//   blk.{i}.attn_k_rot.weight, blk.{i}.attn_v_rot.weight   F32 [d, d] = Mᵀ
// where M is a checkpoint's `rotation` (row-vector convention, x' = x·M), so
// reading the tensor as a linear weight W gives x' = W·x. Tensor names,
// layout and order follow the seeds' export_rot_kv_gguf.py: base tensors,
// then every K rotation, then every V rotation; no extra metadata keys.
// Shared by oscar-bake and `oscar-calibrate --bake`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace oscar::bake {

// One kind of rotation (K or V) for every layer, as GGUF stores it: W = Mᵀ.
struct Rotations {
  std::string kind;    // "K" or "V"
  std::string source;  // where it came from (for messages)
  std::map<int, int> dim;                  // layer -> d
  std::map<int, std::vector<float>> w;     // layer -> W, row-major d*d
  double max_ortho = 0;                    // filled by bake()
};

// From a checkpoint file (M, transposed here); logs one line to `log`.
Rotations from_checkpoint(const std::string& path, const std::string& kind, std::FILE* log);
// From another rot-kv GGUF's tensors (already W).
Rotations from_gguf(const gguf::GgufFile& g, const std::string& kind, std::FILE* log);
// From in-memory matrices M (row-vector convention), e.g. fresh calibration.
Rotations from_matrices(const std::map<int, std::vector<float>>& m, const std::map<int, int>& dim,
                        const std::string& kind, const std::string& source);

struct BakeOptions {
  std::string base, out;
  bool force = false;  // replace rotations the base already has
  // Head dim of every layer, when the caller knows it from the model config
  // (layers may differ); empty: every layer must match the base's
  // <arch>.attention.key_length / value_length (or embedding/head count).
  std::vector<int> layer_dims;
  std::FILE* log = stderr;     // progress lines
  std::string log_prefix = "oscar-bake";
};

struct BakeSummary {
  size_t base_tensors = 0;
  uint64_t base_bytes = 0;
  size_t replaced = 0;  // rotation tensors of the base dropped (--force)
  size_t k_layers = 0, v_layers = 0;
  double k_ortho = 0, v_ortho = 0;
};

// Validates k and v against the base (layer coverage, head dims,
// orthogonality within 1e-3) and writes opts.out, which appears only when
// complete. Throws oscar::Error with one line on any refusal.
BakeSummary bake(const BakeOptions& opts, Rotations& k, Rotations& v);

std::string human_bytes(uint64_t n);

}  // namespace oscar::bake
