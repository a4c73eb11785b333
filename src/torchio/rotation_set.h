// OSCAR rotation checkpoints (k_rotation_qqt_r_h_pbr.pt, v_rotation_sst_r_h_pbr.pt).
//
// Schema (see docs/OSCAR.md §1, "Checkpoints"): a dict
//   {format_version: int, objective: str, source_grouping: str,
//    layers: {layer_id: {layer_id: int, rotation: float[d, d], eigenvalues: float[d]}}}
// The rotation M is in the row-vector convention, x' = x·M; a GGUF stores
// W = Mᵀ (see transpose()).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "torchio/checkpoint.h"

namespace oscar::torchio {

struct RotationSet {
  int format_version = 0;
  std::string objective;        // e.g. "qqt_r_h_pbr"
  std::string source_grouping;  // e.g. "layer"
  std::string source;           // the path or name it was read from
  int dim = 0;                  // d when every layer has the same; 0 when they differ
  std::map<int, int> dims;      // layer -> its d (models such as Gemma mix head dims)
  std::map<int, std::vector<float>> rotation;     // layer -> M, row-major d*d
  std::map<int, std::vector<float>> eigenvalues;  // layer -> d values
  std::string rotation_dtype;   // dtype as stored (converted to float32 here)

  int n_layers() const { return (int)rotation.size(); }
};

// Loads and validates `path`: every key present with the right type, layer
// ids non-negative and equal to their entry's layer_id, every rotation square
// (d×d, d may differ between layers) with d eigenvalues, all values finite. Throws oscar::Error
// naming the file and the offending field.
RotationSet load_rotation_set(const std::string& path);
// Same, for an already parsed checkpoint (`name` goes into errors).
RotationSet rotation_set_from(const Value& root, const std::string& name);

// max |M·Mᵀ − I| over all entries, computed in double.
double orthogonality_error(const std::vector<float>& m, int d);
// Mᵀ of a row-major d×d matrix.
std::vector<float> transpose(const std::vector<float>& m, int d);

}  // namespace oscar::torchio
