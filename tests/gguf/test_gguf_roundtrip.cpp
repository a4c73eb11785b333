// Writer → reader round trips: every value type (incl. nested arrays), every
// tensor type, chunked writes, byte-identical copies, and the writer's
// refusals (which must never leave a file behind).
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"

namespace oscar::gguf::test {
namespace {

namespace fs = std::filesystem;

std::vector<KeyValue> all_value_kinds() {
  using V = Value;
  std::vector<KeyValue> kv = {
      {"u8.max", V::u8(255)},
      {"i8.min", V::i8(-128)},
      {"u16.max", V::u16(65535)},
      {"i16.min", V::i16(-32768)},
      {"u32.max", V::u32(0xffffffffu)},
      {"i32.min", V::i32(std::numeric_limits<int32_t>::min())},
      {"f32", V::f32(-1.5e-7f)},
      {"bool.t", V::boolean(true)},
      {"bool.f", V::boolean(false)},
      {"str", V::str("h\xc3\xa9llo")},
      {"str.empty", V::str("")},
      {"str.nul", V::str(std::string("a\0b", 3))},
      {"u64.max", V::u64(~0ull)},
      {"i64.min", V::i64(std::numeric_limits<int64_t>::min())},
      {"f64", V::f64(3.141592653589793)},
      {"arr.empty", V::array(ValueType::FLOAT64, {})},
      {"arr.strings", V::string_array({"<s>", "", "\xe2\x96\x81the"})},
      {"arr.f32", V::f32_array({1.0f, -0.0f, std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::signaling_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::denorm_min()})},
      {"f64.snan", V::f64(std::numeric_limits<double>::signaling_NaN())},
      {"arr.i32", V::i32_array({-1, 0, 1})},
      {"arr.bool", V::array(ValueType::BOOL, {V::boolean(true), V::boolean(false)})},
      {"arr.u64", V::array(ValueType::UINT64, {V::u64(1), V::u64(~0ull)})},
      {"arr.i8", V::array(ValueType::INT8, {V::i8(-1), V::i8(127)})},
  };
  // Arrays of arrays: of strings, of empty arrays, three levels deep.
  kv.push_back({"arr.arr.str", V::array(ValueType::ARRAY, {V::string_array({"a", "b"}),
                                                           V::string_array({})})});
  kv.push_back({"arr.arr.empty", V::array(ValueType::ARRAY, {V::array(ValueType::UINT8, {}),
                                                             V::array(ValueType::INT64, {})})});
  kv.push_back({"arr.3deep",
                V::array(ValueType::ARRAY,
                         {V::array(ValueType::ARRAY, {V::array(ValueType::UINT16, {V::u16(7)})})})});
  return kv;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = (uint8_t)rng();
  return b;
}

// Every tensor type the table knows, each with two blocks per row and 3 rows.
struct Declared {
  std::string name;
  TensorType type;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};
std::vector<Declared> all_tensor_types() {
  std::vector<Declared> out;
  for (uint32_t id = 0; id < 64; ++id) {
    auto info = tensor_type_info(id);
    if (!info) continue;
    Declared d{std::string("t.") + info->name, info->type, {2ull * info->block_size, 3}, {}};
    d.data = random_bytes((size_t)info->type_size * 2 * 3, id);
    out.push_back(std::move(d));
  }
  out.push_back({"t.4d", TensorType::F16, {3, 2, 2, 2}, random_bytes(48, 99)});
  return out;
}

fs::path write_sample(const fs::path& dir, const std::string& file, size_t chunk = 0,
                      uint32_t alignment = 0, uint32_t version = 3) {
  const fs::path p = dir / file;
  GgufWriter w(p.string(), version);
  if (alignment) w.add_kv("general.alignment", Value::u32(alignment));
  for (auto& kv : all_value_kinds()) w.add_kv(kv.key, kv.value);
  auto ts = all_tensor_types();
  for (auto& t : ts) w.add_tensor(t.name, t.type, t.shape);
  for (auto& t : ts) {
    if (chunk == 0) {
      w.write_tensor(t.name, t.data);
    } else {
      for (size_t o = 0; o < t.data.size(); o += chunk)
        w.write_tensor_data(std::span<const uint8_t>(t.data).subspan(o, std::min(chunk, t.data.size() - o)));
    }
  }
  w.finish();
  return p;
}

TEST(GgufRoundTrip, EveryValueAndTensorType) {
  auto dir = temp_dir();
  for (uint32_t version : {2u, 3u})
    for (uint32_t alignment : {0u, 1u, 64u, 4096u}) {
      SCOPED_TRACE("v" + std::to_string(version) + " alignment " + std::to_string(alignment));
      auto p = write_sample(dir, "rt.gguf", 0, alignment, version);
      EXPECT_FALSE(fs::exists(p.string() + ".tmp"));
      GgufFile f = GgufFile::open(p.string());
      EXPECT_EQ(f.version(), version);
      const size_t a = alignment ? alignment : kDefaultAlignment;
      EXPECT_EQ(f.alignment(), a);
      EXPECT_EQ(f.data_offset() % a, 0u);

      auto kvs = all_value_kinds();
      const size_t extra = alignment ? 1 : 0;
      ASSERT_EQ(f.metadata().size(), kvs.size() + extra);
      for (size_t i = 0; i < kvs.size(); ++i) {
        const auto& got = f.metadata()[i + extra];
        EXPECT_EQ(got.key, kvs[i].key);
        EXPECT_TRUE(same_value(got.value, kvs[i].value)) << kvs[i].key;
        ASSERT_NE(f.find(kvs[i].key), nullptr);
      }
      auto ts = all_tensor_types();
      ASSERT_EQ(f.tensors().size(), ts.size());
      for (size_t i = 0; i < ts.size(); ++i) {
        const TensorInfo& t = f.tensors()[i];
        EXPECT_EQ(t.name, ts[i].name);
        EXPECT_EQ(t.type, ts[i].type);
        EXPECT_EQ(t.shape, ts[i].shape);
        EXPECT_EQ(t.offset % a, 0u);
        EXPECT_EQ(t.n_bytes, ts[i].data.size());
        auto data = f.tensor_data(t);
        EXPECT_TRUE(std::equal(data.begin(), data.end(), ts[i].data.begin(), ts[i].data.end())) << t.name;
        EXPECT_EQ(f.find_tensor(t.name), &t);
      }
      // Each tensor is followed by zero padding to the alignment.
      EXPECT_EQ(f.file_size() % a, 0u);
    }
  fs::remove_all(dir);
}

TEST(GgufRoundTrip, ChunkedWritesGiveTheSameBytes) {
  auto dir = temp_dir();
  auto whole = read_bytes(write_sample(dir, "whole.gguf"));
  for (size_t chunk : {1, 7, 4096}) {
    auto parts = read_bytes(write_sample(dir, "chunk" + std::to_string(chunk) + ".gguf", chunk));
    EXPECT_EQ(parts, whole) << "chunk " << chunk;
  }
  fs::remove_all(dir);
}

TEST(GgufRoundTrip, CopyIsByteIdentical) {
  auto dir = temp_dir();
  for (uint32_t alignment : {0u, 16u, 128u}) {
    auto src = write_sample(dir, "src.gguf", 0, alignment, alignment == 16 ? 2 : 3);
    auto dst = dir / "dst.gguf";
    copy_gguf(GgufFile::open(src.string()), dst.string());
    EXPECT_EQ(read_bytes(dst), read_bytes(src)) << "alignment " << alignment;
    // And a copy of the copy.
    auto dst2 = dir / "dst2.gguf";
    copy_gguf(GgufFile::open(dst.string()), dst2.string());
    EXPECT_EQ(read_bytes(dst2), read_bytes(src));
  }
  fs::remove_all(dir);
}

// The writer and the independent test encoder agree byte for byte.
TEST(GgufRoundTrip, WriterMatchesHandEncoding) {
  auto dir = temp_dir();
  auto p = dir / "w.gguf";
  {
    GgufWriter w(p.string());
    w.add_kv("general.architecture", Value::str("llama"));
    w.add_kv("ids", Value::array(ValueType::UINT32, {Value::u32(1), Value::u32(2)}));
    w.add_tensor("w", TensorType::F32, {3});
    const float x[3] = {1, 2, 3};
    w.write_tensor("w", {reinterpret_cast<const uint8_t*>(x), sizeof x});
    w.finish();
  }
  Builder B;
  B.header(3, 1, 2);
  KvBuilder kv{B};
  kv.string("general.architecture", "llama");
  kv.u32_array("ids", {1, 2});
  tensor_info(B, 0, "w", {3}, 0, 0);
  B.pad_to(32);
  B.raw(1.0f).raw(2.0f).raw(3.0f);
  B.pad_to(32);
  EXPECT_EQ(read_bytes(p), B.b);
  fs::remove_all(dir);
}

TEST(GgufRoundTrip, MetadataOnlyFileHasNoPadding) {
  auto dir = temp_dir();
  auto p = dir / "meta.gguf";
  {
    GgufWriter w(p.string());
    w.add_kv("a", Value::u8(1));
    w.finish();
  }
  auto b = read_bytes(p);
  EXPECT_EQ(b.size(), 24u + 8 + 1 + 4 + 1);
  GgufFile f = GgufFile::open(p.string());
  EXPECT_EQ(f.tensors().size(), 0u);
  EXPECT_EQ(f.get_int("a"), 1);
  fs::remove_all(dir);
}

TEST(GgufRoundTrip, TypedLookups) {
  auto dir = temp_dir();
  GgufFile f = GgufFile::open(write_sample(dir, "l.gguf").string());
  EXPECT_EQ(f.get_string("str"), "h\xc3\xa9llo");
  EXPECT_EQ(f.get_int("i32.min"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(f.get_int("u32.max"), 0xffffffffll);
  EXPECT_EQ(f.get_float("f64"), 3.141592653589793);
  EXPECT_EQ(f.get_float("u8.max"), 255.0);  // ints are accepted as numbers
  EXPECT_EQ(f.get_bool("bool.t"), true);
  EXPECT_EQ(f.get_int_or("missing", 7), 7);
  EXPECT_EQ(f.get_string_or("missing", "d"), "d");
  EXPECT_EQ(f.get_float_or("missing", 0.5), 0.5);
  EXPECT_FALSE(f.get_string("missing").has_value());
  EXPECT_EQ(f.get_array("missing"), nullptr);
  ASSERT_NE(f.get_array("arr.strings"), nullptr);
  EXPECT_EQ(f.get_array("arr.strings")->items.size(), 3u);
  EXPECT_EQ(f.find_tensor("nope"), nullptr);

  auto err = [&](auto fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_CONTAINS(err([&] { f.get_int("str"); }), "key 'str' has type string, expected an integer");
  EXPECT_CONTAINS(err([&] { f.get_int("u64.max"); }), "key 'u64.max' value does not fit in int64");
  EXPECT_CONTAINS(err([&] { f.get_string("u8.max"); }), "key 'u8.max' has type uint8, expected string");
  EXPECT_CONTAINS(err([&] { f.get_bool("u8.max"); }), "expected bool");
  EXPECT_CONTAINS(err([&] { f.get_float("str"); }), "expected a number");
  EXPECT_CONTAINS(err([&] { f.get_array("str"); }), "expected array");
  EXPECT_CONTAINS(err([&] { f.get_int_or("str", 1); }), "expected an integer");
  fs::remove_all(dir);
}

// ---- writer refusals ----------------------------------------------------

std::string writer_error(const std::function<void(GgufWriter&)>& fn, const fs::path& p) {
  std::string msg;
  {
    GgufWriter w(p.string());
    try {
      fn(w);
    } catch (const Error& e) {
      msg = e.what();
    }
  }
  // Whatever happened, nothing half-written is left behind.
  EXPECT_FALSE(fs::exists(p)) << msg;
  EXPECT_FALSE(fs::exists(p.string() + ".tmp")) << msg;
  return msg;
}

TEST(GgufWriter, RefusesBadDeclarationsAndData) {
  auto dir = temp_dir();
  const auto p = dir / "bad.gguf";
  const std::vector<uint8_t> sixteen(16), eight(8);
  struct C {
    const char* expected;
    std::function<void(GgufWriter&)> fn;
  };
  const std::vector<C> cases = {
      {"duplicate key 'a'", [](GgufWriter& w) { w.add_kv("a", Value::u8(1)); w.add_kv("a", Value::u8(2)); }},
      {"empty metadata key", [](GgufWriter& w) { w.add_kv("", Value::u8(1)); }},
      {"general.alignment must be uint32, got uint64",
       [](GgufWriter& w) { w.add_kv("general.alignment", Value::u64(32)); }},
      {"general.alignment 24 is not a non-zero power of two",
       [](GgufWriter& w) { w.add_kv("general.alignment", Value::u32(24)); }},
      {"key 'x': uint8 value 300 is out of range",
       [](GgufWriter& w) { w.add_kv("x", Value{ValueType::UINT8, uint64_t(300)}); }},
      {"key 'x': int16 value 40000 is out of range",
       [](GgufWriter& w) { w.add_kv("x", Value{ValueType::INT16, int64_t(40000)}); }},
      {"key 'x': string value does not hold a string",
       [](GgufWriter& w) { w.add_kv("x", Value{ValueType::STRING, uint64_t(1)}); }},
      {"key 'x': array element 1 has type int32, expected uint32",
       [](GgufWriter& w) { w.add_kv("x", Value::array(ValueType::UINT32, {Value::u32(1), Value::i32(2)})); }},
      {"duplicate tensor name 'w'",
       [](GgufWriter& w) { w.add_tensor("w", TensorType::F32, {4}); w.add_tensor("w", TensorType::F32, {4}); }},
      {"empty tensor name", [](GgufWriter& w) { w.add_tensor("", TensorType::F32, {4}); }},
      {"tensor 'w' has unknown type 5", [](GgufWriter& w) { w.add_tensor("w", (TensorType)5, {4}); }},
      {"tensor 'w' has 5 dimensions", [](GgufWriter& w) { w.add_tensor("w", TensorType::F32, {1, 1, 1, 1, 1}); }},
      {"tensor 'w' dimension 1 is zero", [](GgufWriter& w) { w.add_tensor("w", TensorType::F32, {1, 0}); }},
      {"tensor 'w' (q4_K): row length 100 is not a multiple of the block size 256",
       [](GgufWriter& w) { w.add_tensor("w", TensorType::Q4_K, {100}); }},
      {"tensor 'w' needs exactly 16 bytes, got 8",
       [&](GgufWriter& w) { w.add_tensor("w", TensorType::F32, {4}); w.write_tensor("w", eight); }},
      {"tensor 'b' written out of order: 'a' is next",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.add_tensor("b", TensorType::F32, {4});
         w.write_tensor("b", sixteen);
       }},
      {"tensor 'a' got only 8 of its 16 bytes before tensor 'b'",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.add_tensor("b", TensorType::F32, {4});
         w.write_tensor_data(eight);
         w.write_tensor("b", sixteen);
       }},
      {"chunk of 16 bytes overruns tensor 'a' (8 of its 16 bytes left)",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.write_tensor_data(eight);
         w.write_tensor_data(sixteen);
       }},
      {"got 8 bytes of tensor data after the last tensor",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.write_tensor("a", sixteen);
         w.write_tensor_data(eight);
       }},
      {"tensor 'b' got 0 of its 16 bytes (1 tensor(s) incomplete)",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.add_tensor("b", TensorType::F32, {4});
         w.write_tensor("a", sixteen);
         w.finish();
       }},
      {"add_tensor after tensor data writing has begun",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.write_tensor_data(eight);
         w.add_tensor("b", TensorType::F32, {4});
       }},
      {"add_kv after tensor data writing has begun",
       [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.write_tensor_data(eight);
         w.add_kv("k", Value::u8(0));
       }},
      // Destroyed before finish(): no exception, but no file either.
      {"", [&](GgufWriter& w) {
         w.add_tensor("a", TensorType::F32, {4});
         w.write_tensor("a", sixteen);
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expected);
    const std::string msg = writer_error(c.fn, p);
    if (*c.expected) {
      EXPECT_EQ(msg.rfind("gguf writer: " + p.string() + ": ", 0), 0u) << msg;
      EXPECT_CONTAINS(msg, c.expected);
    } else {
      EXPECT_EQ(msg, "");
    }
  }
  EXPECT_THROW(GgufWriter(p.string(), 1), Error);
  fs::remove_all(dir);
}

TEST(GgufWriter, FailureKeepsAnExistingFileIntact) {
  auto dir = temp_dir();
  auto p = write_sample(dir, "keep.gguf");
  const auto before = read_bytes(p);
  {
    GgufWriter w(p.string());
    w.add_tensor("a", TensorType::F32, {4});
    EXPECT_THROW(w.finish(), Error);
  }
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_FALSE(fs::exists(p.string() + ".tmp"));
  fs::remove_all(dir);
}

TEST(GgufWriter, UnwritableDirectoryIsReported) {
  GgufWriter w("/nonexistent-dir/x.gguf");
  w.add_kv("a", Value::u8(1));
  try {
    w.finish();
    FAIL();
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "cannot create '/nonexistent-dir/x.gguf.tmp'");
  }
}

TEST(GgufWriter, ReportsLayoutAndProgress) {
  auto dir = temp_dir();
  GgufWriter w((dir / "p.gguf").string());
  w.add_tensor("a", TensorType::Q8_0, {64, 2});  // 136 bytes
  w.add_tensor("b", TensorType::F32, {3});
  EXPECT_EQ(w.tensors()[0].n_bytes, 136u);
  const std::vector<uint8_t> a(136), b(12);
  w.write_tensor_data(std::span<const uint8_t>(a).first(100));
  EXPECT_EQ(w.current_tensor(), 0u);
  EXPECT_EQ(w.bytes_left_in_current(), 36u);
  EXPECT_EQ(w.tensors()[1].offset, 160u);
  w.write_tensor_data(std::span<const uint8_t>(a).subspan(100));
  EXPECT_EQ(w.current_tensor(), 1u);
  w.write_tensor("b", b);
  EXPECT_EQ(w.current_tensor(), 2u);
  w.finish();
  EXPECT_EQ(GgufFile::open((dir / "p.gguf").string()).tensors()[1].offset, 160u);
  fs::remove_all(dir);
}

TEST(GgufValue, Float32NaNsSurviveBitExact) {
  for (uint32_t bits : {0x7f800001u, 0xffa00000u, 0x7fc00000u, 0xff812345u, 0x00000001u, 0x80000000u}) {
    float f;
    std::memcpy(&f, &bits, 4);
    const float back = narrow_to_f32(widen_f32(f));
    uint32_t got;
    std::memcpy(&got, &back, 4);
    EXPECT_EQ(got, bits) << std::hex << bits;
  }
}

TEST(GgufValue, AccessorsAndNames) {
  EXPECT_STREQ(value_type_name(ValueType::FLOAT64), "float64");
  EXPECT_STREQ(value_type_name((ValueType)99), "unknown");
  EXPECT_EQ(Value::u64(~0ull).as_int(), std::nullopt);
  EXPECT_EQ(Value::i8(-1).as_uint(), std::nullopt);
  EXPECT_EQ(Value::boolean(true).as_int(), 1);
  EXPECT_EQ(Value::boolean(true).as_double(), std::nullopt);
  EXPECT_EQ(Value::str("x").as_int(), std::nullopt);
  EXPECT_EQ(Value::f32(0.5f).as_double(), 0.5);
  EXPECT_EQ(Value::u8(1).as_bool(), std::nullopt);
  EXPECT_EQ(Value::u8(1).as_string(), nullptr);
  EXPECT_EQ(Value::u8(1).as_array(), nullptr);
  EXPECT_EQ(encoded_value_size(Value::string_array({"ab", ""})), 12u + 10 + 8);
}

}  // namespace
}  // namespace oscar::gguf::test
