// oscar-calibrate end to end on tiny generated models: planted outlier
// directions are recovered (the calibrated rotation beats the Hadamard on
// INT2 score SNR), --bake writes a model that loads with the checkpoint's
// rotations, the checkpoints load in python3-torch, and bad input gets a
// clear one-line error.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <sstream>

#include "../bake/bake_test_util.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "torchio/rotation_set.h"

namespace oscar::calib {
namespace {

using namespace oscar::bake::test;

constexpr int kHd = 64;
const std::string kShape = "--arch qwen3 --preset tiny --layers 2 --embd 128 --heads 4 --kv-heads 2 --head-dim 64 "
                           "--ffn 128 --type f32 --rope-base 1e12 --seed 3";

bool calibrate_built() {
  return fs::exists(fs::path(OSCAR_BIN_DIR) / "oscar-calibrate") && fs::exists(fs::path(OSCAR_BIN_DIR) / "oscar-mkmodel");
}

// Plain words, so the tiny byte-level vocabulary yields varied tokens.
void write_text(const fs::path& p, int words, unsigned seed) {
  static const char* w[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far", "away",
                            "from", "home", "in", "rain", "quietly", "number", "7", "over", "bridge"};
  std::mt19937 rng(seed);
  std::string s;
  for (int i = 0; i < words; ++i) s += std::string(w[rng() % 20]) + (i % 13 == 12 ? ".\n" : " ");
  write_bytes(p, std::vector<uint8_t>(s.begin(), s.end()));
}

// Plants one outlier direction u in every layer's queries and keys: each
// head's Q and K projection becomes a·u·vᵀ (a = the head's Frobenius norm)
// and the per-head Q/K norm weights become 1, so every query and key is ±√d·u
// (up to rounding and a negligible RoPE turn). u is spread over the low-frequency RoPE
// channels (with a huge RoPE base, position hardly turns it) and is not
// axis-aligned: the fixed Hadamard turns it into a Gaussian-looking row that
// 2-bit codes badly, while the calibrated R·H maps it onto one Hadamard row,
// whose two levels the codec stores exactly. Returns u.
std::vector<double> plant_outliers(const fs::path& in, const fs::path& out) {
  gguf::GgufFile src = gguf::GgufFile::open(in.string());
  gguf::GgufWriter w(out.string(), src.version());
  w.add_metadata_from(src);
  w.add_tensors_from(src);
  std::mt19937 rng(42);
  std::normal_distribution<double> N(0, 1);
  std::vector<double> u(kHd, 0.0);
  for (int c = 0; c < kHd; ++c)
    if (c % (kHd / 2) >= kHd / 4) u[(size_t)c] = N(rng);
  double un = 0;
  for (double x : u) un += x * x;
  for (double& x : u) x /= std::sqrt(un);
  auto ends = [](const std::string& n, const std::string& suf) {
    return n.size() > suf.size() && n.compare(n.size() - suf.size(), suf.size(), suf) == 0;
  };
  for (const auto& t : src.tensors()) {
    auto bytes = src.tensor_data(t);
    std::vector<float> data(bytes.size() / 4);
    std::memcpy(data.data(), bytes.data(), bytes.size());
    if (ends(t.name, ".attn_q_norm.weight") || ends(t.name, ".attn_k_norm.weight")) {
      std::fill(data.begin(), data.end(), 1.0f);
    } else if (ends(t.name, ".attn_q.weight") || ends(t.name, ".attn_k.weight")) {
      const size_t n_in = t.shape[0], n_out = t.shape[1];
      std::vector<double> v(n_in);
      double vn = 0;
      for (double& x : v) {
        x = N(rng);
        vn += x * x;
      }
      for (double& x : v) x /= std::sqrt(vn);
      for (size_t h = 0; h < n_out / kHd; ++h) {
        double fro = 0;
        for (size_t r = h * kHd; r < (h + 1) * kHd; ++r)
          for (size_t c = 0; c < n_in; ++c) fro += (double)data[r * n_in + c] * data[r * n_in + c];
        const double a = std::sqrt(fro);
        for (size_t r = 0; r < (size_t)kHd; ++r)
          for (size_t c = 0; c < n_in; ++c) data[(h * kHd + r) * n_in + c] = (float)(a * u[r] * v[c]);
      }
    }
    w.write_tensor(t.name, {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4});
  }
  w.finish();
  return u;
}

struct SnrRow {
  double none, hadamard, calibrated;
};

std::vector<SnrRow> parse_snr(const std::string& out) {
  std::vector<SnrRow> rows;
  std::istringstream in(out);
  std::string line;
  const std::regex re(R"(^\s*(\d+)\s+(\d+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+[-+][\d.]+\s*$)");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, re)) rows.push_back({std::stod(m[3]), std::stod(m[4]), std::stod(m[5])});
  return rows;
}

class Calibrate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!calibrate_built()) GTEST_SKIP() << "oscar-calibrate / oscar-mkmodel not built";
    dir_ = temp_dir("calibrate");
    base_ = dir_ / "base.gguf";
    ToolRun r = run_tool("oscar-mkmodel", kShape + " -o " + quote(base_.string()), dir_);
    ASSERT_EQ(r.status, 0) << r.err;
    text_ = dir_ / "text.txt";
    write_text(text_, 1400, 1);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  ToolRun calibrate(const fs::path& model, const std::string& extra) {
    return run_tool("oscar-calibrate", "-m " + quote(model.string()) + " -f " + quote(text_.string()) +
                                           " --ctx 128 --snr-tokens 256 -t 2 " + extra, dir_);
  }
  // A refusal: exit 1 and one line "oscar-calibrate: error: ..." naming the problem.
  static void expect_refused(const ToolRun& r, const std::string& msg) {
    EXPECT_EQ(r.status, 1) << r.out;
    const size_t at = r.err.find("oscar-calibrate: error: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    const std::string line = r.err.substr(at);
    EXPECT_CONTAINS(line, msg);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "want one line: " << line;
  }
  fs::path dir_, base_, text_;
};

TEST_F(Calibrate, PlantedOutliersBeatHadamard) {
  const fs::path planted = dir_ / "planted.gguf";
  const std::vector<double> u = plant_outliers(base_, planted);
  ToolRun r = calibrate(planted, "--tokens 1024 --out " + quote((dir_ / "rot").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  // Recovered: the K rotation sends u (a row vector, x' = x·M) to a flat
  // ±1/√d pattern, i.e. onto a single Hadamard row.
  const torchio::RotationSet k = torchio::load_rotation_set((dir_ / "rot" / "k_rotation_qqt_r_h_pbr.pt").string());
  for (const auto& [id, m] : k.rotation) {
    double worst = 0;
    for (int c = 0; c < kHd; ++c) {
      double x = 0;
      for (int r = 0; r < kHd; ++r) x += u[(size_t)r] * m[(size_t)r * kHd + c];
      worst = std::max(worst, std::fabs(std::fabs(x) - 1.0 / std::sqrt((double)kHd)));
    }
    EXPECT_LT(worst, 1e-3) << "layer " << id << ": u is not mapped onto one Hadamard row";
  }
  const std::vector<SnrRow> snr = parse_snr(r.out);
  ASSERT_EQ(snr.size(), 2u) << r.out;
  for (size_t i = 0; i < snr.size(); ++i) {
    EXPECT_GT(snr[i].calibrated, snr[i].hadamard + 3.0) << "layer " << i << "\n" << r.out;
    EXPECT_GT(snr[i].calibrated, snr[i].none) << "layer " << i;
    std::printf("layer %zu SNR dB: none %.2f, hadamard %.2f, calibrated %.2f\n", i, snr[i].none, snr[i].hadamard,
                snr[i].calibrated);
  }
  EXPECT_CONTAINS(r.out, "time: ");
  EXPECT_CONTAINS(r.err, "pass 2/2");
}

TEST_F(Calibrate, BakedModelLoadsWithTheWrittenRotations) {
  const fs::path rot = dir_ / "rot", baked = dir_ / "baked.gguf";
  ToolRun r = calibrate(base_, "--tokens 600 --out " + quote(rot.string()) + " --bake " + quote(baked.string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "baked ");
  const torchio::RotationSet k = torchio::load_rotation_set((rot / "k_rotation_qqt_r_h_pbr.pt").string());
  const torchio::RotationSet v = torchio::load_rotation_set((rot / "v_rotation_sst_r_h_pbr.pt").string());
  EXPECT_EQ(k.objective, "qqt_r_h_pbr");
  EXPECT_EQ(v.objective, "sst_r_h_pbr");
  ASSERT_EQ(k.n_layers(), 2);
  ASSERT_EQ(k.dim, kHd);
  for (const auto* rs : {&k, &v})
    for (const auto& [id, m] : rs->rotation) {
      EXPECT_LT(torchio::orthogonality_error(m, kHd), 1e-5) << id;
      const auto& ev = rs->eigenvalues.at(id);
      EXPECT_TRUE(std::is_sorted(ev.begin(), ev.end())) << "eigenvalues not ascending, layer " << id;
    }
  // Base metadata and tensors byte for byte, then Mᵀ of every K and V layer.
  expect_baked(base_, baked, k.rotation, v.rotation, kHd);
  // The loader accepts it and binds the same matrices.
  const quant::QuantTable table(detect_cpu());
  auto m = model::Model::load(baked.string(), table, Logger::quiet());
  for (int i = 0; i < 2; ++i) {
    const auto& lw = m->weights().layers[(size_t)i];
    EXPECT_EQ(lw.k_rot, torchio::transpose(k.rotation.at(i), kHd));
    EXPECT_EQ(lw.v_rot, torchio::transpose(v.rotation.at(i), kHd));
  }
  // python3-torch reads the same values.
  if (have_torch()) {
    const auto tk = torch_rotations(rot / "k_rotation_qqt_r_h_pbr.pt", kHd, 2, dir_);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(tk.at(i), k.rotation.at(i)) << "layer " << i;
  }
  // Baking again over a rotated model needs --force.
  r = calibrate(baked, "--tokens 600 --snr-tokens 0 --out " + quote((dir_ / "rot2").string()) + " --bake " +
                           quote((dir_ / "baked2.gguf").string()));
  expect_refused(r, "already has rotation tensors");
}

TEST_F(Calibrate, HeldOutTextFromItsOwnFile) {
  const fs::path held = dir_ / "held.txt";
  write_text(held, 200, 9);
  ToolRun r = calibrate(base_, "--tokens 300 --heldout " + quote(held.string()) + " --snr-tokens 100 --out " +
                                   quote((dir_ / "rot").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "SNR on 100 held-out tokens");
  EXPECT_CONTAINS(r.err, "calibrating on 300 tokens");
  EXPECT_EQ(parse_snr(r.out).size(), 2u) << r.out;
  // --snr-tokens 0: no report, rotations still written.
  r = calibrate(base_, "--tokens 300 --snr-tokens 0 --out " + quote((dir_ / "rot0").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("attention-score SNR"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "rot0" / "v_rotation_sst_r_h_pbr.pt"));
}

TEST_F(Calibrate, BadInputIsRefusedClearly) {
  const std::string out = " --out " + quote((dir_ / "o").string());
  expect_refused(run_tool("oscar-calibrate", "-m " + quote(base_.string()) + out, dir_), "missing -f TEXT");
  expect_refused(run_tool("oscar-calibrate", "-m " + quote(base_.string()) + " -f " +
                                                 quote((dir_ / "nope.txt").string()) + out, dir_),
                 "nope.txt");
  write_bytes(dir_ / "empty.txt", {});
  expect_refused(run_tool("oscar-calibrate", "-m " + quote(base_.string()) + " -f " +
                                                 quote((dir_ / "empty.txt").string()) + out, dir_),
                 "is empty");
  expect_refused(calibrate(base_, ""), "missing --out DIR");
  write_text(dir_ / "short.txt", 8, 2);
  expect_refused(run_tool("oscar-calibrate", "-m " + quote(base_.string()) + " -f " +
                                                 quote((dir_ / "short.txt").string()) + out, dir_),
                 "too few tokens");
  expect_refused(run_tool("oscar-calibrate", "-m " + quote(base_.string()) + " -f " +
                                                 quote((dir_ / "short.txt").string()) + " --snr-tokens 0" + out, dir_),
                 "too few tokens");
  // An output folder below a regular file cannot be created, whoever runs this.
  expect_refused(calibrate(base_, "--out " + quote((text_ / "sub").string())), "cannot create the output directory");
  expect_refused(calibrate(base_, "--out " + quote((dir_ / "o").string()) + " --bake " +
                                      quote((dir_ / "no-such-dir" / "x.gguf").string())),
                 "does not exist");
  expect_refused(calibrate(base_, "--ctx 1" + out), "--ctx must be at least 2");
  expect_refused(calibrate(base_, "--tokens many" + out), "not a whole number");
  // A head dim that is not a power of two cannot take the Hadamard factor.
  const fs::path odd = dir_ / "odd.gguf";
  ToolRun r = run_tool("oscar-mkmodel", "--arch qwen3 --preset tiny --layers 1 --embd 96 --heads 2 --kv-heads 1 "
                                        "--head-dim 48 --ffn 64 --type f32 -o " + quote(odd.string()), dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_refused(calibrate(odd, out), "not a power of two");
  EXPECT_FALSE(fs::exists(dir_ / "o" / "k_rotation_qqt_r_h_pbr.pt"));
}

}  // namespace
}  // namespace oscar::calib
