// Checkpoints written by torch.save (python3-torch) in many shapes: every
// value and every tensor (float16/bfloat16/float64, non-contiguous, offset,
// shared storages, scalars, empty) reads back equal to what torch reads.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "torchio/rotation_set.h"
#include "torchio_test_util.h"

namespace oscar::torchio::test {
namespace {

class Generated : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_torch()) return;
    dir_ = temp_dir("torchio-gen");
    make_checkpoints("gen " + quote(dir_.string()));
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!have_torch()) GTEST_SKIP() << OSCAR_PYTHON << " cannot import torch (install python3-torch)";
  }
  static fs::path dir_;
};
fs::path Generated::dir_;

std::vector<float> expected_floats(const fs::path& p) {
  auto b = read_bytes(p);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

TEST_F(Generated, ScalarsContainersAndKeys) {
  Checkpoint ck = Checkpoint::open((dir_ / "mixed.pt").string());
  const Value& r = ck.root();
  ASSERT_TRUE(r.is_dict());
  EXPECT_EQ(r.at("i").as_int("i"), 7);
  EXPECT_EQ(r.at("neg").as_int("neg"), -5);
  EXPECT_EQ(r.at("big").as_int("big"), 1ll << 40);
  EXPECT_EQ(r.at("bigneg").as_int("bigneg"), -(1ll << 40));
  EXPECT_EQ(r.at("f").as_float("f"), 1.5);
  EXPECT_EQ(r.at("s").as_str("s"), "h\xc3\xa9llo");
  EXPECT_EQ(r.at("t").kind, Value::Kind::Bool);
  EXPECT_TRUE(r.at("t").b);
  EXPECT_FALSE(r.at("fa").b);
  EXPECT_TRUE(r.at("n").is_none());
  EXPECT_EQ(r.at(3).as_str("3"), "int key");
  const Value& lst = r.at("lst");
  ASSERT_EQ(lst.kind, Value::Kind::List);
  ASSERT_EQ(lst.items.size(), 3u);
  EXPECT_EQ(lst.items[1]->s, "a");
  EXPECT_EQ(lst.items[2]->f, 2.5);
  const Value& tup = r.at("tup");
  ASSERT_EQ(tup.kind, Value::Kind::Tuple);
  EXPECT_EQ(tup.items[2]->i, 3);
  const Value& od = r.at("od");
  ASSERT_TRUE(od.is_dict());
  EXPECT_TRUE(od.ordered);
  ASSERT_EQ(od.dict.size(), 2u);
  EXPECT_EQ(od.dict[0].first->s, "b");  // insertion order kept
  EXPECT_EQ(od.at("a").i, 2);
  const Value& deep = *r.at("nested").at("deeper").items[0];
  EXPECT_EQ(deep.at("x").items[1]->items[1]->i, 3);
  EXPECT_EQ(r.at("ints").tensor().dtype, DType::I64);
  EXPECT_THROW(r.at("ints").tensor().to_float32(), Error);
  EXPECT_THROW(r.at("missing"), Error);
}

TEST_F(Generated, TensorsEqualTorch) {
  Checkpoint ck = Checkpoint::open((dir_ / "mixed.pt").string());
  const Value& ts = ck.root().at("tensors");
  std::ifstream in(dir_ / "mixed.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  ASSERT_EQ(meta.size(), ts.dict.size());
  for (const auto& [name, m] : meta.items()) {
    SCOPED_TRACE(name);
    const Tensor& t = ts.at(name).tensor(name);
    EXPECT_EQ(dtype_name(t.dtype), m["dtype"].get<std::string>());
    EXPECT_EQ(t.shape, m["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.is_contiguous(), m["contiguous"].get<bool>());
    EXPECT_EQ(t.storage_offset, m["offset"].get<int64_t>());
    const std::vector<float> got = t.to_float32();
    const std::vector<float> want = expected_floats(dir_ / (name + ".bin"));
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
  }
  // Views of one storage share it.
  EXPECT_EQ(ts.at("offset").tensor().storage, ts.at("shared_whole").tensor().storage);
}

TEST_F(Generated, StateDictWithMetadataAndParameter) {
  Checkpoint sd = Checkpoint::open((dir_ / "state_dict.pt").string());
  EXPECT_TRUE(sd.root().ordered);
  const std::vector<float> w = sd.root().at("weight").tensor().to_float32();
  const std::vector<float> want = expected_floats(dir_ / "sd_weight.bin");
  EXPECT_EQ(w, want);
  EXPECT_EQ(sd.root().at("bias").tensor().shape, std::vector<int64_t>{3});

  Checkpoint p = Checkpoint::open((dir_ / "param.pt").string());
  EXPECT_EQ(p.root().at("p").tensor().to_float32(), std::vector<float>(4, 1.0f));
}

TEST_F(Generated, LegacyFormatIsNamed) {
  try {
    Checkpoint::open((dir_ / "legacy.pt").string());
    FAIL() << "legacy format accepted";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "legacy (non-zip) torch.save format");
  }
}

TEST_F(Generated, SmallRotationSet) {
  const fs::path p = dir_ / "rot.pt";
  make_checkpoints("rot " + quote(p.string()) + " 16 3 7 --str-keys");
  RotationSet rs = load_rotation_set(p.string());
  EXPECT_EQ(rs.dim, 16);
  EXPECT_EQ(rs.n_layers(), 3);
  for (const auto& [id, m] : rs.rotation) EXPECT_LT(orthogonality_error(m, 16), 1e-6);
  const auto t = transpose(rs.rotation.at(1), 16);
  EXPECT_EQ(t[1 * 16 + 0], rs.rotation.at(1)[0 * 16 + 1]);

  const fs::path bad = dir_ / "scaled.pt";
  make_checkpoints("rot " + quote(bad.string()) + " 8 2 7 --scale 1.1");
  RotationSet s = load_rotation_set(bad.string());  // loads; orthogonality is the caller's check
  EXPECT_GT(orthogonality_error(s.rotation.at(0), 8), 0.2);
}

}  // namespace
}  // namespace oscar::torchio::test
