#include "model/architecture.h"

#include "core/error.h"

namespace oscar::model {

const Architecture& find_architecture(const std::string& name) {
  for (const Architecture* a : {&arch_llama(), &arch_qwen2(), &arch_qwen3()})
    if (name == a->name) return *a;
  throw Error("model architecture '" + name + "' is not supported (supported: llama, qwen2, qwen3)");
}

}  // namespace oscar::model
