// The malformed-file corpus: every file is generated here, and each must be
// refused with its own specific message (not just "some error").
#include <gtest/gtest.h>

#include <random>

#include "gguf_test_util.h"

namespace oscar::gguf::test {
namespace {

namespace fs = std::filesystem;

// A small but complete file: scalars, a string, arrays (incl. nested),
// two tensors, data. Returns the builder (with its truncation checks), the
// header end and the tensor data ranges.
struct Sample {
  Builder B;
  size_t header_end = 0;
  size_t data_offset = 0;
  struct Range { std::string name; size_t start, end; };
  std::vector<Range> tensors;
};

Sample make_sample() {
  Sample s;
  Builder& B = s.B;
  B.header(3, 2, 6);
  KvBuilder kv{B};
  kv.string("general.architecture", "llama");
  kv.scalar<uint32_t>("general.alignment", ValueType::UINT32, 32);
  kv.scalar<float>("llama.rope.freq_base", ValueType::FLOAT32, 10000.0f);
  kv.u32_array("ids", {1, 2, 3});
  kv.string_array("tokens", {"<s>", "", "hello"});
  kv.nested_i16("nested", {{1, -2}, {}, {7}});
  tensor_info(B, 0, "tok_embd.weight", {32, 2}, (uint32_t)TensorType::Q8_0, 0);
  tensor_info(B, 1, "norm.weight", {5}, (uint32_t)TensorType::F32, 96);
  s.header_end = B.pos();
  B.pad_to(32);
  s.data_offset = B.pos();
  B.zeros(68);  // q8_0: 2 rows x 34 bytes
  B.pad_to(32);
  B.zeros(20);  // 5 x f32
  B.pad_to(32);
  s.tensors = {{"tok_embd.weight", s.data_offset, s.data_offset + 68},
               {"norm.weight", s.data_offset + 96, s.data_offset + 116}};
  return s;
}

TEST(GgufMalformed, SampleIsValid) {
  Sample s = make_sample();
  GgufFile f = GgufFile::parse(s.B.b, "t.gguf");
  EXPECT_EQ(f.metadata().size(), 6u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.data_offset(), s.data_offset);
  EXPECT_EQ(f.tensors()[1].offset, 96u);
  const Array* nested = f.get_array("nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->items.size(), 3u);
  EXPECT_EQ(nested->items[0].as_array()->items[1].as_int(), -2);
}

// Cut the file at every byte: each prefix fails with the message of the
// field it cuts (or of the count/data check that notices first).
TEST(GgufMalformed, TruncatedAtEveryByte) {
  Sample s = make_sample();
  const auto& full = s.B.b;
  for (size_t len = 0; len < full.size(); ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + len);
    const std::string err = parse_error(cut);
    SCOPED_TRACE("length " + std::to_string(len));
    std::string want;
    if (len < 4)
      want = "offset 0: truncated: magic needs 4 bytes, " + std::to_string(len) + " left";
    else if (len < 8)
      want = "offset 4: truncated: version needs 4 bytes, " + std::to_string(len - 4) + " left";
    else if (len < s.header_end)
      want = s.B.expect(len);
    else if (len < s.data_offset)
      want = "data section starts at " + std::to_string(s.data_offset) +
             ", past end of file (size " + std::to_string(len) + ")";
    else
      for (const auto& t : s.tensors)
        if (t.end > len) {
          want = "tensor '" + t.name + "' data [" + std::to_string(t.start) + ".." +
                 std::to_string(t.end) + ") extends past end of file (size " +
                 std::to_string(len) + ")";
          break;
        }
    if (want.empty()) {
      // Cut inside the trailing padding: still a valid file.
      EXPECT_EQ(err, "");
      continue;
    }
    ASSERT_FALSE(err.empty()) << "a file cut to " << len << " bytes parsed";
    EXPECT_EQ(err.rfind("gguf: t.gguf: ", 0), 0u) << err;
    EXPECT_CONTAINS(err, (want));
  }
}

// Flip bytes at random: parsing must succeed or throw oscar::Error, never
// crash (run under sanitizers in CI).
TEST(GgufMalformed, RandomCorruptionNeverCrashes) {
  Sample s = make_sample();
  std::mt19937 rng(1234);
  int refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = s.B.b;
    const int flips = 1 + (int)(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % s.header_end] = (uint8_t)rng();
    try {
      GgufFile f = GgufFile::parse(b, "t.gguf");
      for (const auto& t : f.tensors()) (void)f.tensor_data(t);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
}

// ---- one specific defect per file -------------------------------------

struct Case {
  const char* name;
  std::vector<uint8_t> bytes;
  std::string expected;
};

std::vector<uint8_t> header_only(uint32_t magic, uint32_t version, uint64_t nt, uint64_t nkv) {
  Builder B;
  B.raw<uint32_t>(magic).raw<uint32_t>(version).raw<uint64_t>(nt).raw<uint64_t>(nkv);
  return B.b;
}

// A file with one key `key` of type tag `type` followed by `body`.
std::vector<uint8_t> one_kv(const std::string& key, uint32_t type, const std::vector<uint8_t>& body) {
  Builder B;
  B.raw<uint32_t>(kMagic).raw<uint32_t>(3).raw<uint64_t>(0).raw<uint64_t>(1);
  B.raw<uint64_t>(key.size());
  B.b.insert(B.b.end(), key.begin(), key.end());
  B.raw<uint32_t>(type);
  B.b.insert(B.b.end(), body.begin(), body.end());
  return B.b;
}

template <class... T>
std::vector<uint8_t> le(T... xs) {
  Builder B;
  (B.raw(xs), ...);
  return B.b;
}

// A file with the given KVs (already encoded, each: key, type, body) and
// tensor infos, then padding and `data_bytes` of data.
struct TI {
  std::string name;
  std::vector<uint64_t> shape;
  uint32_t type;
  uint64_t offset;
};
std::vector<uint8_t> with_tensors(const std::vector<TI>& ts, size_t data_bytes,
                                  uint32_t alignment = 0) {
  Builder B;
  B.raw<uint32_t>(kMagic).raw<uint32_t>(3).raw<uint64_t>(ts.size()).raw<uint64_t>(alignment ? 1 : 0);
  if (alignment) {
    const std::string k = "general.alignment";
    B.raw<uint64_t>(k.size());
    B.b.insert(B.b.end(), k.begin(), k.end());
    B.raw<uint32_t>((uint32_t)ValueType::UINT32).raw<uint32_t>(alignment);
  }
  for (const auto& t : ts) {
    B.raw<uint64_t>(t.name.size());
    B.b.insert(B.b.end(), t.name.begin(), t.name.end());
    B.raw<uint32_t>((uint32_t)t.shape.size());
    for (uint64_t d : t.shape) B.raw<uint64_t>(d);
    B.raw<uint32_t>(t.type).raw<uint64_t>(t.offset);
  }
  B.pad_to(alignment ? alignment : 32);
  B.zeros(data_bytes);
  return B.b;
}

std::vector<uint8_t> nested_arrays(int depth) {
  // depth levels of single-element arrays around an empty u8 array.
  std::vector<uint8_t> body;
  for (int i = 0; i < depth - 1; ++i) {
    auto h = le<uint32_t, uint64_t>((uint32_t)ValueType::ARRAY, 1);
    body.insert(body.end(), h.begin(), h.end());
  }
  auto last = le<uint32_t, uint64_t>((uint32_t)ValueType::UINT8, 0);
  body.insert(body.end(), last.begin(), last.end());
  return one_kv("deep", (uint32_t)ValueType::ARRAY, body);
}

std::vector<uint8_t> two_kvs_same_key() {
  auto a = one_kv("k", (uint32_t)ValueType::UINT8, {1});
  a[16] = 2;  // kv count
  auto tail = le<uint64_t, char, uint32_t, uint8_t>(1, 'k', (uint32_t)ValueType::UINT8, 2);
  a.insert(a.end(), tail.begin(), tail.end());
  return a;
}

const uint32_t F32 = (uint32_t)TensorType::F32;

std::vector<uint8_t> cut(std::vector<uint8_t> b, size_t n) {
  b.resize(n);
  return b;
}

std::vector<Case> corpus() {
  const uint32_t U32 = (uint32_t)ValueType::UINT32, ARR = (uint32_t)ValueType::ARRAY;
  const uint64_t huge = 1ull << 60;
  return {
      {"empty file", {}, "offset 0: truncated: magic needs 4 bytes, 0 left"},
      {"bad magic", header_only(0x46554746, 3, 0, 0), "offset 0: not a GGUF file (magic 0x46554746"},
      {"version 1", header_only(kMagic, 1, 0, 0), "offset 4: GGUF version 1 is not supported"},
      {"version 4", header_only(kMagic, 4, 0, 0), "offset 4: unsupported GGUF version 4"},
      {"version 0", header_only(kMagic, 0, 0, 0), "offset 4: unsupported GGUF version 0"},
      {"big endian", header_only(kMagic, 0x03000000, 0, 0), "big-endian GGUF files are not supported"},
      {"huge tensor count", header_only(kMagic, 3, huge, 0),
       "offset 8: tensor count 1152921504606846976 is impossible: only 0 bytes"},
      {"max tensor count", header_only(kMagic, 3, ~0ull, 0), "tensor count 18446744073709551615 is impossible"},
      {"huge kv count", header_only(kMagic, 2, 0, huge),
       "offset 16: metadata key/value count 1152921504606846976 is impossible"},
      {"key length huge", le<uint32_t, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>(kMagic, 3, 0, 1, ~0ull, 0, 0),
       "offset 24: key #0 length 18446744073709551615 exceeds the 16 bytes left"},
      {"empty key", one_kv("", U32, le<uint32_t>(5)), "offset 24: key #0 is empty"},
      {"unknown value type 17", one_kv("a.b", 17, le<uint32_t>(0)),
       "offset 35: key #0 ('a.b') has unknown value type 17"},
      {"newline in key", one_kv("a\nb", 17, le<uint32_t>(0)),
       "offset 35: key #0 ('a\\x0ab') has unknown value type 17"},
      {"unknown value type 13", one_kv("a", 13, {0}), "key #0 ('a') has unknown value type 13"},
      {"truncated u32 value", one_kv("a", U32, {1, 2}),
       "offset 37: truncated: key 'a' needs 4 bytes, 2 left"},
      {"bool 2", one_kv("flag", (uint32_t)ValueType::BOOL, {2}),
       "offset 40: key 'flag': bool value 2 is not 0 or 1"},
      {"string value too long", one_kv("s", (uint32_t)ValueType::STRING, le<uint64_t, char>(100, 'x')),
       "offset 37: key 's' string length 100 exceeds the 1 bytes left"},
      {"unknown array element type", one_kv("arr", ARR, le<uint32_t, uint64_t>(99, 0)),
       "offset 39: key 'arr': array has unknown element type 99"},
      {"array count absurd", one_kv("arr", ARR, le<uint32_t, uint64_t, uint32_t>(U32, 1000000000, 7)),
       "offset 43: key 'arr': array of 1000000000 uint32 needs at least 4000000000 bytes, only 4 left"},
      {"array count overflowing", one_kv("arr", ARR, le<uint32_t, uint64_t>(U32, ~0ull)),
       "key 'arr': array of 18446744073709551615 uint32 needs at least more than 2^64 bytes"},
      {"array of strings count absurd", one_kv("t", ARR, le<uint32_t, uint64_t, uint64_t>(8, 5, 0)),
       "key 't': array of 5 string needs at least 40 bytes, only 8 left"},
      {"array of arrays count absurd", one_kv("t", ARR, le<uint32_t, uint64_t, uint64_t>(ARR, 2, 0)),
       "key 't': array of 2 array needs at least 24 bytes, only 8 left"},
      {"bad string inside array",
       one_kv("t", ARR, le<uint32_t, uint64_t, uint64_t, char, uint64_t>(8, 2, 1, 'a', 50)),
       "key 't' element 1 string length 50 exceeds the 0 bytes left"},
      {"bad type inside nested array",
       one_kv("t", ARR, le<uint32_t, uint64_t, uint32_t, uint64_t>(ARR, 1, 42, 0)),
       "key 't' element 0: array has unknown element type 42"},
      {"nesting too deep", nested_arrays(17), "key 'deep' element 0 element 0"},
      {"nesting too deep (message)", nested_arrays(17), "arrays nested deeper than 16 levels"},
      {"duplicate key", two_kvs_same_key(), "offset 38: duplicate key 'k'"},
      {"alignment wrong type", one_kv("general.alignment", (uint32_t)ValueType::UINT64, le<uint64_t>(32)),
       "general.alignment has type uint64, expected uint32"},
      {"alignment zero", one_kv("general.alignment", U32, le<uint32_t>(0)),
       "general.alignment 0 is not a non-zero power of two"},
      {"alignment 48", one_kv("general.alignment", U32, le<uint32_t>(48)),
       "general.alignment 48 is not a non-zero power of two"},
      {"empty tensor name", with_tensors({{"", {4}, F32, 0}}, 16), "offset 24: tensor #0 has an empty name"},
      {"duplicate tensor", with_tensors({{"w", {4}, F32, 0}, {"w", {4}, F32, 32}}, 64),
       "duplicate tensor name 'w'"},
      {"zero dims", with_tensors({{"w", {}, F32, 0}}, 16), "tensor 'w' has 0 dimensions (must be 1..4)"},
      {"five dims", with_tensors({{"w", {1, 1, 1, 1, 1}, F32, 0}}, 16),
       "tensor 'w' has 5 dimensions (must be 1..4)"},
      {"zero dim", with_tensors({{"w", {4, 0}, F32, 0}}, 16), "tensor 'w' dimension 1 is zero"},
      {"dims overflow", with_tensors({{"w", {1ull << 32, 1ull << 32}, F32, 0}}, 16),
       "tensor 'w' element count overflows (dimension 1 = 4294967296)"},
      {"unknown tensor type 4", with_tensors({{"w", {32}, 4, 0}}, 32), "tensor 'w' has unknown tensor type 4"},
      {"unknown tensor type 1000", with_tensors({{"w", {32}, 1000, 0}}, 32),
       "tensor 'w' has unknown tensor type 1000"},
      {"row not multiple of block", with_tensors({{"w", {33}, (uint32_t)TensorType::Q4_0, 0}}, 64),
       "tensor 'w' (q4_0): row length 33 is not a multiple of the block size 32"},
      {"row size overflows", with_tensors({{"w", {1ull << 62, 1}, (uint32_t)TensorType::F64, 0}}, 16),
       "tensor 'w' (f64) byte size overflows"},
      {"byte size overflows", with_tensors({{"w", {1ull << 59, 8}, (uint32_t)TensorType::F64, 0}}, 16),
       "tensor 'w' (f64) byte size overflows"},
      {"misaligned offset", with_tensors({{"w", {4}, F32, 16}}, 64),
       "tensor 'w' offset 16 is not a multiple of the alignment 32"},
      {"misaligned offset (alignment 64)", with_tensors({{"w", {4}, F32, 32}}, 128, 64),
       "tensor 'w' offset 32 is not a multiple of the alignment 64"},
      {"data past end", with_tensors({{"w", {8}, F32, 0}}, 16),
       "tensor 'w' data [64..96) extends past end of file (size 80)"},
      {"offset far past end", with_tensors({{"w", {8}, F32, 1ull << 62}}, 32),
       "tensor 'w' data [4611686018427387968..4611686018427388000) extends past end of file (size 96)"},
      {"offset at 2^64 edge", with_tensors({{"w", {8}, F32, ~0ull - 31}}, 32),
       "extends past end of file (size 96)"},
      {"data section past end", cut(with_tensors({{"w", {1}, F32, 0}}, 0), 57),
       "data section starts at 64, past end of file (size 57)"},
      {"overlap", with_tensors({{"a", {16}, F32, 0}, {"b", {8}, F32, 32}}, 128),
       "tensors 'a' [96..160) and 'b' [128..160) overlap"},
      {"overlap (declared out of order)", with_tensors({{"b", {8}, F32, 32}, {"a", {16}, F32, 0}}, 128),
       "tensors 'a' [96..160) and 'b' [128..160) overlap"},
      {"same offset", with_tensors({{"a", {1}, F32, 0}, {"b", {1}, F32, 0}}, 32),
       "tensors 'a' [96..100) and 'b' [96..100) overlap"},
  };
}

TEST(GgufMalformed, EachDefectGetsItsOwnMessage) {
  for (const auto& c : corpus()) {
    SCOPED_TRACE(c.name);
    const std::string err = parse_error(c.bytes, "x.gguf");
    ASSERT_FALSE(err.empty()) << c.name << ": parsed without error";
    EXPECT_EQ(err.rfind("gguf: x.gguf: ", 0), 0u) << err;
    EXPECT_CONTAINS(err, (c.expected));
    EXPECT_EQ(err.find('\n'), std::string::npos) << "multi-line error: " << err;
  }
}

// Inputs the fuzzer found (fuzz/README.md): each must be refused cleanly with
// a one-line error, and every seed must be valid.
TEST(GgufFuzzRegressions, SeedsAreValidAndCrashInputsAreRefused) {
  const fs::path dir = fs::path(OSCAR_SOURCE_DIR) / "tests" / "data" / "gguf-seeds";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int seeds = 0, regressions = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".gguf") continue;
    ++seeds;
    EXPECT_NO_THROW(GgufFile::open(e.path().string())) << e.path();
  }
  EXPECT_GE(seeds, 3);
  for (const auto& e : fs::directory_iterator(dir / "regressions")) {
    ++regressions;
    SCOPED_TRACE(e.path().string());
    const std::string err = parse_error(read_bytes(e.path()), "r.gguf");
    ASSERT_FALSE(err.empty());
    EXPECT_EQ(err.rfind("gguf: r.gguf: ", 0), 0u) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  EXPECT_GE(regressions, 1);
}

TEST(GgufMalformed, DepthLimitIsExact) {
  EXPECT_EQ(parse_error(nested_arrays(16)), "");
  EXPECT_NE(parse_error(nested_arrays(17)), "");
}

TEST(GgufMalformed, OpenReportsMissingFile) {
  try {
    GgufFile::open("/nonexistent/dir/m.gguf");
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), ("/nonexistent/dir/m.gguf"));
  }
}

TEST(GgufMalformed, OpenNamesThePath) {
  auto dir = temp_dir();
  auto p = dir / "bad.gguf";
  write_bytes(p, header_only(kMagic, 1, 0, 0));
  try {
    GgufFile::open(p.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gguf: " + p.string() + ": offset 4: GGUF version 1 is not supported (only versions 2 and 3)");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace oscar::gguf::test
