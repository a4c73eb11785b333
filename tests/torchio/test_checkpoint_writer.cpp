// The rotation checkpoint writer (torchio/checkpoint_writer.h): what it
// writes loads in Debian's python3-torch with the published files' exact
// structure and bit-identical values, reads back through our own reader, and
// inconsistent input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "torchio/checkpoint.h"
#include "torchio/checkpoint_writer.h"
#include "torchio/rotation_set.h"
#include "torchio_test_util.h"

namespace oscar::torchio {
namespace {

using namespace oscar::torchio::test;

RotationLayer random_layer(int id, int d, std::mt19937& rng) {
  std::normal_distribution<float> N(0.f, 1.f);
  RotationLayer l{id, d, std::vector<float>((size_t)d * d), std::vector<float>((size_t)d)};
  for (float& x : l.rotation) x = N(rng);
  for (float& x : l.eigenvalues) x = N(rng);
  return l;
}

const fs::path kPublished = fs::path(OSCAR_TEST_DATA) / "rotations/qwen3-4b-thinking-2507/k_rotation_qqt_r_h_pbr.pt";

// Writes the checkpoints once and reads them all in one python3-torch run
// (importing torch costs seconds).
class TorchReads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_torch()) return;
    dir_ = temp_dir("ckw");
    std::mt19937 rng(5);
    mixed_.objective = "sst_r_h_pbr";
    // Mixed head dims, and ids that need 1-, 2- and 4-byte pickle ints.
    for (auto [id, d] : std::vector<std::pair<int, int>>{{0, 8}, {1, 16}, {300, 8}, {70000, 4}})
      mixed_.layers.push_back(random_layer(id, d, rng));
    save_rotation_checkpoint((dir_ / "v_rotation_sst_r_h_pbr.pt").string(), mixed_);
    RotationCheckpoint like;  // shaped like the published K file
    like.objective = "qqt_r_h_pbr";
    for (int i = 0; i < 36; ++i) like.layers.push_back(random_layer(i, 128, rng));
    save_rotation_checkpoint((dir_ / "k_rotation_qqt_r_h_pbr.pt").string(), like);
    std::string cmds = "schema " + quote((dir_ / "v_rotation_sst_r_h_pbr.pt").string()) + " " +
                       quote((dir_ / "mixed.json").string()) + "\n";
    cmds += "dump " + quote((dir_ / "v_rotation_sst_r_h_pbr.pt").string()) + " " + quote((dir_ / "dump.bin").string()) + "\n";
    cmds += "schema " + quote((dir_ / "k_rotation_qqt_r_h_pbr.pt").string()) + " " +
            quote((dir_ / "like.json").string()) + "\n";
    if (fs::exists(kPublished))
      cmds += "schema " + quote(kPublished.string()) + " " + quote((dir_ / "published.json").string()) + "\n";
    write_bytes(dir_ / "cmds.txt", std::vector<uint8_t>(cmds.begin(), cmds.end()));
    make_checkpoints("batch " + quote((dir_ / "cmds.txt").string()));
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!have_torch()) GTEST_SKIP() << OSCAR_PYTHON << " cannot import torch (install python3-torch)";
  }
  static nlohmann::json json(const std::string& name) { return nlohmann::json::parse(slurp_text(dir_ / name)); }
  static fs::path dir_;
  static RotationCheckpoint mixed_;
};
fs::path TorchReads::dir_;
RotationCheckpoint TorchReads::mixed_;

// Values bit-exact, and the structure (key order and types, dtypes, shapes,
// strides, zip entry names) equal to the published file's.
TEST_F(TorchReads, ValuesAndStructure) {
  EXPECT_FALSE(fs::exists(dir_ / "v_rotation_sst_r_h_pbr.pt.tmp"));
  const nlohmann::json s = json("mixed.json");
  ASSERT_EQ(s["keys"].size(), 4u);
  EXPECT_EQ(s["keys"][1][1], "objective");
  const auto& layers = s["values"][3];
  ASSERT_EQ(layers["keys"].size(), 4u);
  EXPECT_EQ(layers["keys"][3], nlohmann::json::array({"int", 70000}));
  EXPECT_EQ(layers["values"][1]["values"][1]["shape"], nlohmann::json::array({16, 16}));
  EXPECT_EQ(layers["values"][3]["values"][2]["shape"], nlohmann::json::array({4}));
  // Values as torch reads them: every rotation, then every eigenvalue vector.
  std::vector<float> want;
  for (const auto& l : mixed_.layers) want.insert(want.end(), l.rotation.begin(), l.rotation.end());
  for (const auto& l : mixed_.layers) want.insert(want.end(), l.eigenvalues.begin(), l.eigenvalues.end());
  const auto got = read_bytes(dir_ / "dump.bin");
  ASSERT_EQ(got.size(), want.size() * 4);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);

  // One test, not two: CTest runs each in its own process, and every
  // process would pay for importing torch again.
  if (!fs::exists(kPublished)) GTEST_SKIP() << "test data absent (see testdata/README.md), structure not compared: " << kPublished;
  EXPECT_EQ(json("like.json"), json("published.json"));
  // The same zip entry names (torch adds a random serialization id we leave out).
  auto names = [](const fs::path& p) {
    const auto bytes = read_bytes(p);
    const ZipArchive zip = ZipArchive::parse(bytes, p.string());
    std::vector<std::string> n;
    for (const auto& e : zip.entries())
      if (e.name.find("serialization_id") == std::string::npos) n.push_back(e.name);
    return n;
  };
  EXPECT_EQ(names(dir_ / "k_rotation_qqt_r_h_pbr.pt"), names(kPublished));
}

TEST(CheckpointWriter, OwnReaderRoundTrip) {
  std::mt19937 rng(11);
  RotationCheckpoint ck;
  ck.objective = "qqt_r_h_pbr";
  for (int i = 0; i < 3; ++i) ck.layers.push_back(random_layer(i, 32, rng));
  const std::vector<uint8_t> bytes = rotation_checkpoint_bytes(ck, "k_rot");
  // Every entry's data starts on a 64-byte boundary, as torch.save aligns them.
  const ZipArchive zip = ZipArchive::parse(bytes, "mem");
  for (const auto& e : zip.entries()) {
    EXPECT_EQ((zip.data(e).data() - bytes.data()) % 64, 0) << e.name;
    EXPECT_EQ(e.name.rfind("k_rot/", 0), 0u) << e.name;
  }
  const Checkpoint parsed = Checkpoint::parse(bytes, "mem");
  const RotationSet rs = rotation_set_from(parsed.root(), "mem");
  EXPECT_EQ(rs.format_version, 1);
  EXPECT_EQ(rs.objective, "qqt_r_h_pbr");
  EXPECT_EQ(rs.source_grouping, "layer");
  EXPECT_EQ(rs.dim, 32);
  EXPECT_EQ(rs.rotation_dtype, "float32");
  ASSERT_EQ(rs.n_layers(), 3);
  for (const auto& l : ck.layers) {
    EXPECT_EQ(std::memcmp(rs.rotation.at(l.layer_id).data(), l.rotation.data(), l.rotation.size() * 4), 0);
    EXPECT_EQ(std::memcmp(rs.eigenvalues.at(l.layer_id).data(), l.eigenvalues.data(), l.eigenvalues.size() * 4), 0);
  }
}

TEST(CheckpointWriter, OwnReaderKeepsMixedHeadDims) {
  std::mt19937 rng(12);
  RotationCheckpoint ck;
  ck.objective = "qqt_r_h_pbr";
  ck.layers = {random_layer(0, 16, rng), random_layer(1, 32, rng), random_layer(2, 16, rng)};
  const std::vector<uint8_t> bytes = rotation_checkpoint_bytes(ck, "mixed");
  const Checkpoint parsed = Checkpoint::parse(bytes, "mem");
  const RotationSet rs = rotation_set_from(parsed.root(), "mem");
  EXPECT_EQ(rs.dim, 0);
  EXPECT_EQ(rs.dims, (std::map<int, int>{{0, 16}, {1, 32}, {2, 16}}));
  EXPECT_EQ(rs.rotation.at(1), ck.layers[1].rotation);
  EXPECT_EQ(rs.eigenvalues.at(2), ck.layers[2].eigenvalues);
}

TEST(CheckpointWriter, RefusesInconsistentInput) {
  std::mt19937 rng(1);
  auto refused = [](const RotationCheckpoint& ck, const std::string& msg) {
    try {
      rotation_checkpoint_bytes(ck, "a");
      ADD_FAILURE() << "accepted; wanted: " << msg;
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), msg);
    }
  };
  RotationCheckpoint ck;
  refused(ck, "no layers");
  ck.layers.push_back(random_layer(0, 8, rng));
  ck.layers.push_back(random_layer(0, 8, rng));
  refused(ck, "appears twice");
  ck.layers.pop_back();
  ck.layers[0].rotation.pop_back();
  refused(ck, "expected d*d");
  ck.layers[0] = random_layer(0, 8, rng);
  ck.layers[0].eigenvalues.push_back(1);
  refused(ck, "expected d");
  ck.layers[0] = random_layer(0, 8, rng);
  ck.layers[0].rotation[5] = NAN;
  refused(ck, "non-finite");
  ck.layers[0] = random_layer(-2, 8, rng);
  refused(ck, "negative layer id");
  ck.layers[0] = random_layer(0, 8, rng);
  EXPECT_THROW(rotation_checkpoint_bytes(ck, "a/b"), Error);
  EXPECT_THROW(save_rotation_checkpoint("/nonexistent-dir/x.pt", ck), Error);
}

}  // namespace
}  // namespace oscar::torchio
