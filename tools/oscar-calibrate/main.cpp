// oscar-calibrate: computes OSCAR rotations for a model from calibration
// text, on the CPU (src/calib), writes them as the published checkpoints
// (k_rotation_qqt_r_h_pbr.pt, v_rotation_sst_r_h_pbr.pt; torch.load reads
// them), optionally bakes them into a rot-kv GGUF, and reports per layer the
// INT2 attention-score SNR on held-out text without rotation, with the
// Hadamard and with the calibrated rotation.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "bake.h"
#include "calib/calibrator.h"
#include "calib_text.h"
#include "core/error.h"
#include "engine.h"
#include "run_settings.h"
#include "torchio/checkpoint_writer.h"
#include "../common/tool_main.h"

namespace fs = std::filesystem;
using namespace oscar;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kKName = "k_rotation_qqt_r_h_pbr.pt";
constexpr const char* kVName = "v_rotation_sst_r_h_pbr.pt";

void usage() {
  std::printf(
      "usage: oscar-calibrate -m BASE.gguf -f TEXT --out DIR [options]\n"
      "  -m FILE            the model to calibrate\n"
      "  -f FILE            calibration text\n"
      "  --out DIR          writes DIR/%s and DIR/%s\n"
      "  --tokens N         calibration tokens to use (default: all of TEXT but the held-out tail)\n"
      "  --ctx N            positions per sequence (default 2048)\n"
      "  --heldout FILE     held-out text for the SNR report (default: the tail of TEXT)\n"
      "  --snr-tokens N     held-out tokens (default 512; 0: no SNR report)\n"
      "  --snr-clip R       q2_0 clip ratio of the SNR report's keys (default 0.96, OSCAR's K default)\n"
      "  --bake OUT.gguf    also write BASE plus the new rotations\n"
      "  --force            with --bake: replace rotations BASE already has\n"
      "  -t N               threads (default: all)\n"
      "  -ub N              tokens per forward call (default 512)\n",
      kKName, kVName);
}

struct CalibFlags : tools::ExtraFlags {
  std::string out, bake, heldout;
  long long tokens = 0;
  int ctx = 2048;
  int snr_tokens = 512;
  float snr_clip = 0.96f;
  bool force = false;
  bool handle(const std::string& f, const std::function<std::string()>& next) override {
    auto num = [&](const std::string& v) -> long long {
      try {
        size_t used = 0;
        const long long x = std::stoll(v, &used);
        if (used == v.size()) return x;
      } catch (const std::exception&) {
      }
      throw Error(f + ": '" + v + "' is not a whole number");
    };
    if (f == "--out") out = next();
    else if (f == "--bake") bake = next();
    else if (f == "--heldout") heldout = next();
    else if (f == "--tokens") tokens = num(next());
    else if (f == "--ctx") ctx = (int)num(next());
    else if (f == "--snr-tokens") snr_tokens = (int)num(next());
    else if (f == "--snr-clip") {
      const std::string v = next();
      char* end = nullptr;
      snr_clip = std::strtof(v.c_str(), &end);
      if (end != v.c_str() + v.size() || !(snr_clip >= 0 && snr_clip <= 1))
        throw Error("--snr-clip: '" + v + "' is not a ratio in [0, 1]");
    } else if (f == "--force") force = true;
    else return false;
    return true;
  }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Creates DIR and proves it writable before any compute is spent.
void prepare_out_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw Error("cannot create the output directory '" + dir + "'");
  const fs::path probe = fs::path(dir) / ".oscar-calibrate-probe";
  {
    std::ofstream f(probe);
    if (!f) throw Error("the output directory '" + dir + "' is not writable");
  }
  fs::remove(probe, ec);
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

torchio::RotationCheckpoint checkpoint(const std::vector<calib::LayerRotation>& rots, const char* objective) {
  torchio::RotationCheckpoint ck;
  ck.objective = objective;
  for (size_t i = 0; i < rots.size(); ++i) ck.layers.push_back({(int)i, rots[i].dim, rots[i].m, rots[i].eigenvalues});
  return ck;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      usage();
      return 0;
    }
  CalibFlags flags;
  const tools::RunSettings s = tools::parse_run_settings(argc, argv, &flags);
  if (s.model.empty()) throw Error("missing -m MODEL (see --help)");
  if (s.prompt_file.empty()) throw Error("missing -f TEXT: calibration needs text (see --help)");
  if (flags.out.empty()) throw Error("missing --out DIR (see --help)");
  if (s.prompt.empty()) throw Error("the calibration text '" + s.prompt_file + "' is empty");
  if (flags.force && flags.bake.empty()) throw Error("--force only applies with --bake");
  std::string heldout_text;
  if (!flags.heldout.empty()) {
    heldout_text = read_text(flags.heldout);
    if (heldout_text.empty()) throw Error("the held-out text '" + flags.heldout + "' is empty");
  }
  if (!flags.bake.empty()) {
    const fs::path parent = fs::absolute(flags.bake).parent_path();
    if (!fs::is_directory(parent)) throw Error("--bake: the folder of '" + flags.bake + "' does not exist");
  }

  const Logger log(s.verbose ? LogLevel::Debug : LogLevel::Warn);
  auto engine = tools::Engine::load(s, log);
  const model::Model& model = engine->model();
  const model::ModelConfig& mc = model.config();
  const tok::Vocab& vocab = engine->tokenizer().vocab();
  // Refuse before the passes, not after minutes of work.
  if (!flags.bake.empty() && !flags.force)
    for (const auto& lw : model.weights().layers)
      if (!lw.k_rot.empty() || !lw.v_rot.empty())
        throw Error(s.model + " already has rotation tensors; pass --force with --bake to replace them");
  // After the model loads (a bad model leaves no empty folder behind), before any compute.
  prepare_out_dir(flags.out);

  const auto tt = Clock::now();
  const std::vector<int32_t> text = engine->tokenizer().tokenize(s.prompt, /*add_special=*/false, false);
  std::vector<int32_t> held;
  if (!heldout_text.empty()) held = engine->tokenizer().tokenize(heldout_text, false, false);
  calibtool::SplitSettings ss;
  ss.ctx = flags.ctx;
  ss.tokens = flags.tokens;
  ss.snr_tokens = flags.snr_tokens;
  ss.separate_heldout = !flags.heldout.empty();
  ss.min_tokens = mc.max_head_dim();
  ss.bos = vocab.add_bos() && vocab.bos() != tok::kNoToken ? vocab.bos() : -1;
  const calibtool::Split split = calibtool::split_tokens(text, held, ss);
  std::fprintf(stderr,
               "oscar-calibrate: %s: %d layers; text: %zu tokens (%.2f s); calibrating on %lld tokens in %zu "
               "sequence(s) of <= %d, SNR on %lld held-out tokens, %d threads\n",
               s.model.c_str(), mc.n_layer, text.size(), seconds_since(tt), split.calib_tokens, split.calib.size(),
               flags.ctx, split.heldout_tokens, engine->pool().size());

  calib::CalibrationConfig cc;
  cc.n_ubatch = s.n_ubatch;
  cc.snr_q2.clip_ratio = flags.snr_clip;
  const auto t0 = Clock::now();
  const calib::CalibrationResult r =
      calib::calibrate(model, engine->pool(), split.calib, split.heldout, cc,
                       [](const std::string& line) { std::fprintf(stderr, "oscar-calibrate: %s\n", line.c_str()); });
  const double t_total = seconds_since(t0);

  const std::string k_path = (fs::path(flags.out) / kKName).string();
  const std::string v_path = (fs::path(flags.out) / kVName).string();
  torchio::save_rotation_checkpoint(k_path, checkpoint(r.k, "qqt_r_h_pbr"));
  torchio::save_rotation_checkpoint(v_path, checkpoint(r.v, "sst_r_h_pbr"));

  if (!r.snr.empty()) {
    std::printf("INT2 (q2_0, clip %.2f) attention-score SNR on %lld held-out tokens, dB:\n", flags.snr_clip,
                r.heldout_tokens);
    std::printf("layer    d      none  hadamard  calibrated  gain vs hadamard\n");
    double sum[3] = {0, 0, 0};
    for (size_t i = 0; i < r.snr.size(); ++i) {
      const calib::LayerSnr& x = r.snr[i];
      std::printf("%5zu %4d  %8.2f  %8.2f  %10.2f  %+8.2f\n", i, r.k[i].dim, x.none, x.hadamard, x.calibrated,
                  x.calibrated - x.hadamard);
      sum[0] += x.none;
      sum[1] += x.hadamard;
      sum[2] += x.calibrated;
    }
    const double n = (double)r.snr.size();
    std::printf(" mean       %8.2f  %8.2f  %10.2f  %+8.2f\n", sum[0] / n, sum[1] / n, sum[2] / n,
                (sum[2] - sum[1]) / n);
  }
  std::printf("wrote %s and %s (%d layers)\n", k_path.c_str(), v_path.c_str(), mc.n_layer);
  const double fwd_tps = r.t_forward > 0 ? 2.0 * r.calib_tokens / r.t_forward : 0;
  std::printf("time: %.2f s = forward %.2f s (2 passes x %lld tokens, %.1f tokens/s) + statistics %.2f s + "
              "eigen/compose %.2f s + SNR pass %.2f s (forward %.2f, scores %.2f)\n",
              t_total, r.t_forward, r.calib_tokens, fwd_tps, r.t_stats, r.t_eigen, r.t_snr_forward + r.t_snr_stats,
              r.t_snr_forward, r.t_snr_stats);

  if (!flags.bake.empty()) {
    std::map<int, std::vector<float>> km, vm;
    std::map<int, int> dims;
    bake::BakeOptions bo;
    bo.base = s.model;
    bo.out = flags.bake;
    bo.force = flags.force;
    bo.log_prefix = "oscar-calibrate";
    for (int i = 0; i < mc.n_layer; ++i) {
      km[i] = r.k[(size_t)i].m;
      vm[i] = r.v[(size_t)i].m;
      dims[i] = r.k[(size_t)i].dim;
      bo.layer_dims.push_back(mc.layers[(size_t)i].head_dim);
    }
    bake::Rotations k = bake::from_matrices(km, dims, "K", k_path);
    bake::Rotations v = bake::from_matrices(vm, dims, "V", v_path);
    const auto tb = Clock::now();
    const bake::BakeSummary b = bake::bake(bo, k, v);
    std::printf("baked %s: %zu base tensors (%s) + %zu K + %zu V rotations, max |W*W^T - I| K %.3g V %.3g (%.2f s)\n",
                flags.bake.c_str(), b.base_tensors, bake::human_bytes(b.base_bytes).c_str(), b.k_layers, b.v_layers,
                b.k_ortho, b.v_ortho, seconds_since(tb));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return oscar::tools::tool_main("oscar-calibrate", argc, argv, run); }
