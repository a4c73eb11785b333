// Helpers for the oscar-bake end-to-end tests: running the tools, and
// checking a baked file against its base and the expected rotations.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../torchio/torchio_test_util.h"
#include "gguf/gguf_file.h"

namespace oscar::bake::test {

using namespace oscar::torchio::test;

struct ToolRun {
  int status = -1;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  auto b = read_bytes(p);
  return {b.begin(), b.end()};
}

inline ToolRun run_tool(const std::string& tool, const std::string& args, const fs::path& dir) {
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  std::string cmd = quote((fs::path(OSCAR_BIN_DIR) / tool).string());
  cmd += " " + args + " >" + quote(out.string()) + " 2>" + quote(err.string());
  ToolRun r;
  r.status = run_shell(cmd);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline bool tools_built() {
  return fs::exists(fs::path(OSCAR_BIN_DIR) / "oscar-bake") && fs::exists(fs::path(OSCAR_BIN_DIR) / "oscar-mkmodel");
}

// A random qwen3 model with `layers` blocks and head dim `hd`.
inline fs::path make_model(const fs::path& dir, const std::string& name, int layers, int hd) {
  const fs::path p = dir / name;
  const int heads = 2;
  const std::string args = "--arch qwen3 --preset tiny --layers " + std::to_string(layers) + " --head-dim " +
                           std::to_string(hd) + " --embd " + std::to_string(heads * hd) + " --heads " +
                           std::to_string(heads) + " --kv-heads 1 --ffn 128 -o " + quote(p.string());
  ToolRun r = run_tool("oscar-mkmodel", args, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  return p;
}

// Rotations then eigenvalues of every layer as torch reads them.
inline std::map<int, std::vector<float>> torch_rotations(const fs::path& pt, int d, int layers, const fs::path& dir) {
  const fs::path dump = dir / "dump.bin";
  make_checkpoints("dump " + quote(pt.string()) + " " + quote(dump.string()));
  auto b = read_bytes(dump);
  std::map<int, std::vector<float>> m;
  EXPECT_GE(b.size(), (size_t)layers * d * d * 4);
  if (b.size() < (size_t)layers * d * d * 4) return m;
  for (int i = 0; i < layers; ++i) {
    m[i].resize((size_t)d * d);
    std::memcpy(m[i].data(), b.data() + (size_t)i * d * d * 4, (size_t)d * d * 4);
  }
  return m;
}

inline bool same_value(const gguf::Value& a, const gguf::Value& b) {
  if (a.type != b.type || a.v.index() != b.v.index()) return false;
  if (a.is_array()) {
    const gguf::Array* x = a.as_array();
    const gguf::Array* y = b.as_array();
    if (x->elem_type != y->elem_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i)
      if (!same_value(x->items[i], y->items[i])) return false;
    return true;
  }
  if (a.type == gguf::ValueType::FLOAT32 || a.type == gguf::ValueType::FLOAT64) {
    const double x = std::get<double>(a.v), y = std::get<double>(b.v);
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a.v == b.v;
}

// OUT = BASE (metadata identical, every base tensor byte-identical, in order,
// minus BASE's own rotations) + K then V rotations equal to Mᵀ of `k`/`v`.
inline void expect_baked(const fs::path& base_path, const fs::path& out_path,
                         const std::map<int, std::vector<float>>& k, const std::map<int, std::vector<float>>& v,
                         int d) {
  gguf::GgufFile base = gguf::GgufFile::open(base_path.string());
  gguf::GgufFile out = gguf::GgufFile::open(out_path.string());
  EXPECT_EQ(out.version(), base.version());
  ASSERT_EQ(out.metadata().size(), base.metadata().size());
  for (size_t i = 0; i < base.metadata().size(); ++i) {
    EXPECT_EQ(out.metadata()[i].key, base.metadata()[i].key);
    EXPECT_TRUE(same_value(out.metadata()[i].value, base.metadata()[i].value)) << base.metadata()[i].key;
  }
  std::vector<const gguf::TensorInfo*> base_tensors;
  for (const auto& t : base.tensors())
    if (t.name.find("_rot.weight") == std::string::npos) base_tensors.push_back(&t);
  ASSERT_EQ(out.tensors().size(), base_tensors.size() + k.size() + v.size());
  for (size_t i = 0; i < base_tensors.size(); ++i) {
    const auto& bt = *base_tensors[i];
    const auto& ot = out.tensors()[i];
    ASSERT_EQ(ot.name, bt.name);
    EXPECT_EQ(ot.type, bt.type);
    EXPECT_EQ(ot.shape, bt.shape);
    auto a = base.tensor_data(bt), b = out.tensor_data(ot);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << bt.name << " differs";
  }
  size_t i = base_tensors.size();
  for (const auto* rots : {&k, &v}) {
    const char* suffix = rots == &k ? ".attn_k_rot.weight" : ".attn_v_rot.weight";
    for (const auto& [layer, m] : *rots) {
      const auto& t = out.tensors()[i++];
      ASSERT_EQ(t.name, "blk." + std::to_string(layer) + suffix);
      EXPECT_EQ(t.type, TensorType::F32);
      EXPECT_EQ(t.shape, (std::vector<uint64_t>{(uint64_t)d, (uint64_t)d}));
      auto bytes = out.tensor_data(t);
      ASSERT_EQ(bytes.size(), (size_t)d * d * 4);
      std::vector<float> w((size_t)d * d);
      std::memcpy(w.data(), bytes.data(), bytes.size());
      int bad = 0;
      for (int r = 0; r < d; ++r)
        for (int c = 0; c < d; ++c)
          if (std::memcmp(&w[(size_t)r * d + c], &m[(size_t)c * d + r], 4) != 0) ++bad;
      EXPECT_EQ(bad, 0) << t.name << " is not M^T";
    }
  }
}

}  // namespace oscar::bake::test
