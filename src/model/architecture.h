// The architectures we run. Each one lives in its own file (arch_<name>.cpp)
// and says, as data, how its layers differ from a plain pre-norm transformer;
// reading metadata and binding tensors is shared (model_loader.cpp).
#pragma once

#include <string>
#include <vector>

#include "model/model_config.h"

namespace oscar::model {

struct Architecture {
  const char* name;  // value of general.architecture
  RopeStyle rope_style;
  bool qk_norm;
  bool qkv_bias;
};

const Architecture& arch_llama();
const Architecture& arch_qwen2();
const Architecture& arch_qwen3();

// The architecture named `name`, or throws Error listing the supported ones.
const Architecture& find_architecture(const std::string& name);

}  // namespace oscar::model
