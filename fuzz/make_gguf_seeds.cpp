// Writes the small seed corpus for the GGUF fuzzer (tests/data/gguf-seeds):
// valid files covering every value type, nested arrays, several tensor types,
// alignments and both versions. Usage: make_gguf_seeds OUT_DIR
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_writer.h"

using namespace oscar;
using namespace oscar::gguf;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = (uint8_t)(seed + i * 31);
  return b;
}

void metadata_only(const std::string& dir) {
  GgufWriter w(dir + "/metadata_only.gguf");
  w.add_kv("general.architecture", Value::str("llama"));
  w.add_kv("tokenizer.ggml.tokens", Value::string_array({"<unk>", "<s>", "</s>", "a", "b"}));
  w.add_kv("tokenizer.ggml.scores", Value::f32_array({0, 0, 0, -1.5f, -2.5f}));
  w.add_kv("tokenizer.ggml.token_type", Value::i32_array({2, 3, 3, 1, 1}));
  w.add_kv("tokenizer.ggml.add_bos_token", Value::boolean(true));
  w.finish();
}

void all_values(const std::string& dir) {
  GgufWriter w(dir + "/all_values.gguf");
  w.add_kv("u8", Value::u8(200));
  w.add_kv("i8", Value::i8(-5));
  w.add_kv("u16", Value::u16(60000));
  w.add_kv("i16", Value::i16(-300));
  w.add_kv("u32", Value::u32(4000000000u));
  w.add_kv("i32", Value::i32(-70000));
  w.add_kv("f32", Value::f32(0.25f));
  w.add_kv("bool", Value::boolean(false));
  w.add_kv("str", Value::str("hello"));
  w.add_kv("u64", Value::u64(1ull << 40));
  w.add_kv("i64", Value::i64(-(1ll << 40)));
  w.add_kv("f64", Value::f64(-2.5));
  w.add_kv("arr.u16", Value::array(ValueType::UINT16, {Value::u16(1), Value::u16(2)}));
  w.add_kv("arr.arr", Value::array(ValueType::ARRAY, {Value::string_array({"x", "yz"}),
                                                      Value::array(ValueType::INT8, {Value::i8(-1)})}));
  w.add_kv("arr.deep", Value::array(ValueType::ARRAY,
                                    {Value::array(ValueType::ARRAY, {Value::array(ValueType::FLOAT64, {Value::f64(1)})})}));
  w.add_kv("arr.empty", Value::array(ValueType::BOOL, {}));
  w.add_tensor("w", TensorType::F32, {4});
  w.write_tensor("w", pattern(16, 1));
  w.finish();
}

// Several tensor types (computable and not), 1-4 dims, a larger alignment.
void tensors(const std::string& dir, uint32_t version, uint32_t alignment, const char* name) {
  GgufWriter w(dir + "/" + name, version);
  if (alignment) w.add_kv("general.alignment", Value::u32(alignment));
  w.add_kv("general.architecture", Value::str("qwen3"));
  w.add_kv("qwen3.block_count", Value::u32(1));
  struct T { const char* name; TensorType type; std::vector<uint64_t> shape; };
  const std::vector<T> ts = {
      {"token_embd.weight", TensorType::Q4_K, {256, 2}},
      {"blk.0.attn_norm.weight", TensorType::F32, {8}},
      {"blk.0.attn_q.weight", TensorType::Q8_0, {32, 3}},
      {"blk.0.attn_k.weight", TensorType::BF16, {4, 2, 2}},
      {"blk.0.ffn_down.weight", TensorType::Q6_K, {256, 1}},
      {"blk.0.attn_k_rot.weight", TensorType::F16, {2, 2, 1, 2}},
      {"blk.0.exotic", TensorType::IQ2_XXS, {256}},
  };
  for (const auto& t : ts) w.add_tensor(t.name, t.type, t.shape);
  uint8_t seed = 7;
  for (const auto& t : w.tensors()) w.write_tensor(t.name, pattern(t.n_bytes, seed++));
  w.finish();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_gguf_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    metadata_only(dir);
    all_values(dir);
    tensors(dir, 3, 0, "tensors_v3.gguf");
    tensors(dir, 2, 64, "tensors_v2_align64.gguf");
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
