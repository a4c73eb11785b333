#include "model/architecture.h"

#include "core/error.h"

namespace oscar::model {

const Architecture& find_architecture(const std::string& name) {
  const Architecture* all[] = {&arch_llama(), &arch_qwen2(), &arch_qwen3(), &arch_gemma3(), &arch_gemma4()};
  std::string names;
  for (const Architecture* a : all) {
    if (name == a->name) return *a;
    names += std::string(names.empty() ? "" : ", ") + a->name;
  }
  throw Error("model architecture '" + name + "' is not supported (supported: " + names + ")");
}

}  // namespace oscar::model
