// Writing OSCAR rotation checkpoints that torch.load accepts, in the schema
// of the published files (see rotation_set.h):
//   {format_version: 1, objective: str, source_grouping: str,
//    layers: {layer_id(int): {layer_id: int, rotation: float32[d, d],
//                             eigenvalues: float32[d]}}}
// laid out as torch.save lays it out: a zip (zip_writer.h) of
//   <archive>/data.pkl       pickle protocol 2; tensors are
//                            torch._utils._rebuild_tensor_v2 over
//                            persistent-id FloatStorages
//   <archive>/.format_version, .storage_alignment, byteorder
//   <archive>/data/<key>     one contiguous little-endian float32 storage per tensor
//   <archive>/version
// Layers may have different head dims (d is per layer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oscar::torchio {

struct RotationLayer {
  int layer_id = 0;
  int dim = 0;
  std::vector<float> rotation;     // row-major d*d, row-vector convention (x' = x·M)
  std::vector<float> eigenvalues;  // d values
};

struct RotationCheckpoint {
  int format_version = 1;
  std::string objective;                  // "qqt_r_h_pbr" (K) or "sst_r_h_pbr" (V)
  std::string source_grouping = "layer";
  std::vector<RotationLayer> layers;      // written in this order
};

// The checkpoint as bytes; `archive` is the top-level folder inside the zip
// (torch uses the file's stem). Throws oscar::Error on inconsistent input
// (sizes that do not match dim, duplicate layer ids, non-finite values).
std::vector<uint8_t> rotation_checkpoint_bytes(const RotationCheckpoint& ck, const std::string& archive);
// Writes `path` (via "<path>.tmp" and a rename, so a failure leaves no
// partial file). Throws oscar::Error naming the path on any failure.
void save_rotation_checkpoint(const std::string& path, const RotationCheckpoint& ck);

}  // namespace oscar::torchio
