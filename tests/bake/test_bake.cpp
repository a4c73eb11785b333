// oscar-bake on small models with checkpoints written by python3-torch:
// output layout and values, --k-rot/--v-rot overrides, and every refusal
// (non-orthogonal, layer count, head dim, hostile or missing checkpoints)
// leaving no output behind.
#include <gtest/gtest.h>

#include "bake_test_util.h"

namespace oscar::bake::test {
namespace {

constexpr int kD = 16;
constexpr int kLayers = 3;

// Every checkpoint the tests use, made (and dumped as torch reads it) by one
// python run: importing torch costs seconds.
const char* kCheckpoints[][2] = {
    {"rot/k_rotation_qqt_r_h_pbr.pt", "16 3 1"},
    {"rot/v_rotation_sst_r_h_pbr.pt", "16 3 2 --objective sst_r_h_pbr"},
    {"k2.pt", "16 3 9 --str-keys"},
    {"bad.pt", "16 3 5 --scale 1.01"},
    {"two.pt", "16 2 3"},
    {"four.pt", "16 4 3"},
    {"d8.pt", "8 3 3"},
};

class Bake : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!tools_built() || !have_torch()) return;
    data_ = temp_dir("bake-data");
    fs::create_directories(data_ / "rot");
    std::string batch;
    for (const auto& c : kCheckpoints) {
      const fs::path p = data_ / c[0];
      batch += "rot " + quote(p.string()) + " " + c[1] + "\n";
      batch += "dump " + quote(p.string()) + " " + quote(p.string() + ".bin") + "\n";
    }
    write_bytes(data_ / "batch.txt", std::vector<uint8_t>(batch.begin(), batch.end()));
    make_checkpoints("batch " + quote((data_ / "batch.txt").string()));
  }
  static void TearDownTestSuite() {
    if (!data_.empty()) fs::remove_all(data_);
  }
  void SetUp() override {
    if (!tools_built()) GTEST_SKIP() << "oscar-bake / oscar-mkmodel not built in " << OSCAR_BIN_DIR;
    if (!have_torch()) GTEST_SKIP() << OSCAR_PYTHON << " cannot import torch (install python3-torch)";
    dir_ = temp_dir("bake");
    rot_ = data_ / "rot";
    base_ = make_model(dir_, "base.gguf", kLayers, kD);
    out_ = dir_ / "out.gguf";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  static fs::path ck(const std::string& name) { return data_ / name; }
  // M of every layer as torch read it (dumped in SetUpTestSuite).
  static std::map<int, std::vector<float>> torch_m(const std::string& name) {
    auto b = read_bytes(data_ / (name + ".bin"));
    std::map<int, std::vector<float>> m;
    for (int i = 0; i < kLayers; ++i) {
      m[i].resize((size_t)kD * kD);
      std::memcpy(m[i].data(), b.data() + (size_t)i * kD * kD * 4, (size_t)kD * kD * 4);
    }
    return m;
  }
  ToolRun bake(const std::string& extra, const fs::path& base = {}) {
    return run_tool("oscar-bake", "--base " + quote((base.empty() ? base_ : base).string()) + " --out " +
                                      quote(out_.string()) + " " + extra, dir_);
  }
  // A refusal exits 1 with `msg` in a one-line error and leaves neither OUT
  // nor its temp file.
  void expect_refused(const ToolRun& r, const std::string& msg) {
    EXPECT_EQ(r.status, 1) << r.out;
    const size_t at = r.err.find("oscar-bake: error: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    const std::string line = r.err.substr(at);
    EXPECT_CONTAINS(line, msg);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "want one line: " << line;
    EXPECT_FALSE(fs::exists(out_));
    EXPECT_FALSE(fs::exists(out_.string() + ".tmp"));
  }
  static fs::path data_;
  fs::path dir_, rot_, base_, out_;
};
fs::path Bake::data_;

TEST_F(Bake, WritesBasePlusTransposedRotations) {
  ToolRun r = bake("--rot-dir " + quote(rot_.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "3 K + 3 V rotation tensors (F32 16x16)");
  EXPECT_CONTAINS(r.err, "100%");
  expect_baked(base_, out_, torch_m("rot/k_rotation_qqt_r_h_pbr.pt"), torch_m("rot/v_rotation_sst_r_h_pbr.pt"), kD);
}

TEST_F(Bake, OverridesAndStringLayerKeys) {
  const fs::path k2 = ck("k2.pt");
  ToolRun r = bake("--rot-dir " + quote(rot_.string()) + " --k-rot " + quote(k2.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_baked(base_, out_, torch_m("k2.pt"), torch_m("rot/v_rotation_sst_r_h_pbr.pt"), kD);
  // Without --rot-dir both files must be named.
  fs::remove(out_);
  expect_refused(bake("--k-rot " + quote(k2.string())), "no V rotation given");
}

TEST_F(Bake, RefusesNonOrthogonal) {
  const fs::path bad = ck("bad.pt");
  expect_refused(bake("--rot-dir " + quote(rot_.string()) + " --v-rot " + quote(bad.string())),
                 "layer 0 is not orthogonal (max |W*W^T - I| = 0.0201 > 1e-3)");
}

TEST_F(Bake, RefusesLayerCountAndHeadDim) {
  const fs::path two = ck("two.pt"), four = ck("four.pt"), d8 = ck("d8.pt");
  const std::string rd = "--rot-dir " + quote(rot_.string());
  expect_refused(bake(rd + " --k-rot " + quote(two.string())), "covers 2 layers but the model has 3 blocks (layer 2 is missing)");
  expect_refused(bake(rd + " --k-rot " + quote(four.string())), "has layer 3 but the model has 3 blocks");
  expect_refused(bake(rd + " --k-rot " + quote(d8.string())), "is 8x8 but the model's head dim (layer 0, model config) is 16");
}

TEST_F(Bake, RefusesHostileAndMissingInputs) {
  const std::string rd = "--rot-dir " + quote(rot_.string());
  const fs::path junk = dir_ / "junk.pt";
  write_bytes(junk, std::vector<uint8_t>(1000, 'j'));
  expect_refused(bake(rd + " --k-rot " + quote(junk.string())), "not a zip archive");
  // A real checkpoint with its tail cut off.
  auto bytes = read_bytes(rot_ / "k_rotation_qqt_r_h_pbr.pt");
  bytes.resize(bytes.size() - 100);
  write_bytes(junk, bytes);
  expect_refused(bake(rd + " --k-rot " + quote(junk.string())), "truncated zip archive");
  expect_refused(bake(rd + " --k-rot " + quote((dir_ / "none.pt").string())), "cannot open");
  expect_refused(bake("--from-gguf " + quote(base_.string())), "has no K rotation tensors");
  const fs::path notgguf = dir_ / "x.gguf";
  write_bytes(notgguf, std::vector<uint8_t>(64, 0));
  expect_refused(bake(rd, notgguf), "x.gguf");
  // --out may not overwrite the base it reads.
  ToolRun r = run_tool("oscar-bake", "--base " + quote(base_.string()) + " --out " + quote(base_.string()) + " " + rd, dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--out must differ");
  EXPECT_EQ(run_tool("oscar-bake", "--bogus", dir_).status, 2);
}

}  // namespace
}  // namespace oscar::bake::test
