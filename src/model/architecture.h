// The architectures we run. Each one lives in its own file (arch_<name>.cpp)
// and says, as data, how its layers differ from a plain pre-norm transformer;
// reading the common metadata and binding tensors is shared
// (model_loader.cpp). An architecture with more to say (sliding windows,
// per-layer head dims) adds a `configure` step that edits the config.
#pragma once

#include <string>
#include <vector>

#include "model/metadata_reader.h"
#include "model/model_config.h"

namespace oscar::model {

struct Architecture {
  const char* name;  // value of general.architecture
  RopeStyle rope_style;
  bool qk_norm;
  bool qkv_bias;
  // Called after the common hyper-parameters are read; nullptr: nothing more.
  void (*configure)(const MetadataReader& meta, ModelConfig& c) = nullptr;
  // A layer may lack attn_v.weight and take V from the K projection.
  bool optional_v = false;
};

const Architecture& arch_llama();
const Architecture& arch_qwen2();
const Architecture& arch_qwen3();
const Architecture& arch_gemma3();
const Architecture& arch_gemma4();

// The architecture named `name`, or throws Error listing the supported ones.
const Architecture& find_architecture(const std::string& name);

}  // namespace oscar::model
