// oscar-bake: writes a rot-kv GGUF = a base GGUF plus per-layer OSCAR
// rotations (see bake.h), with the flags and file names of the seeds'
// export_rot_kv_gguf.py and the checks that script lacks. The base is
// memory-mapped and streamed, so a 20 GB model needs little RAM.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "bake.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "quant/quant.h"

namespace fs = std::filesystem;
using namespace oscar;

namespace {

constexpr const char* kDefaultK = "k_rotation_qqt_r_h_pbr.pt";
constexpr const char* kDefaultV = "v_rotation_sst_r_h_pbr.pt";

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: oscar-bake --base BASE.gguf --rot-dir DIR --out OUT.gguf\n"
               "                  [--k-rot FILE.pt] [--v-rot FILE.pt] [--from-gguf ROT.gguf] [--force]\n"
               "  --rot-dir DIR      holds %s and %s\n"
               "  --k-rot / --v-rot  override one checkpoint\n"
               "  --from-gguf ROT    take the rotations of another rot-kv GGUF (for those not\n"
               "                     given by --k-rot/--v-rot)\n"
               "  --force            replace rotations the base already has\n",
               kDefaultK, kDefaultV);
}

struct Options {
  std::string base, rot_dir, out, k_rot, v_rot, from_gguf;
  bool force = false;
};

// Per-layer head dims from the model config when the engine can load the base
// (Gemma layers differ: 256/512); empty otherwise, and bake then checks every
// layer against <arch>.attention.key_length. The base is memory-mapped, so
// loading it reads only its small norm vectors.
std::vector<int> layer_dims_of(const std::string& base) {
  try {
    const quant::QuantTable table(detect_cpu());
    const auto m = model::Model::load(base, table, Logger::quiet());
    std::vector<int> dims;
    for (const auto& l : m->config().layers) dims.push_back(l.head_dim);
    return dims;
  } catch (const Error&) {
    return {};  // an architecture or tensor type the engine does not run: still bakeable
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

int run(const Options& o) {
  if (same_file(o.base, o.out) || (!o.from_gguf.empty() && same_file(o.from_gguf, o.out)))
    throw Error("--out must differ from the input files");
  std::optional<gguf::GgufFile> rot_gguf;
  if (!o.from_gguf.empty() && (o.k_rot.empty() || o.v_rot.empty())) rot_gguf = gguf::GgufFile::open(o.from_gguf);
  auto source = [&](const std::string& flag, const char* def, const std::string& kind) {
    if (!flag.empty()) return bake::from_checkpoint(flag, kind, stderr);
    if (rot_gguf) return bake::from_gguf(*rot_gguf, kind, stderr);
    if (o.rot_dir.empty()) throw Error("no " + kind + " rotation given (--rot-dir, --k-rot/--v-rot or --from-gguf)");
    return bake::from_checkpoint((fs::path(o.rot_dir) / def).string(), kind, stderr);
  };
  bake::Rotations k = source(o.k_rot, kDefaultK, "K");
  bake::Rotations v = source(o.v_rot, kDefaultV, "V");

  bake::BakeOptions bo;
  bo.base = o.base;
  bo.out = o.out;
  bo.force = o.force;
  bo.layer_dims = layer_dims_of(o.base);
  const bake::BakeSummary s = bake::bake(bo, k, v);
  int d_min = k.dim.begin()->second, d_max = d_min;
  for (const auto& [layer, d] : k.dim) d_min = std::min(d_min, d), d_max = std::max(d_max, d);
  const std::string shape = d_min == d_max ? std::to_string(d_min) + "x" + std::to_string(d_min)
                                           : "per layer " + std::to_string(d_min) + ".." + std::to_string(d_max);
  std::printf("wrote %s: %zu base tensors (%s, byte for byte) + %zu K + %zu V rotation tensors (F32 %s)\n",
              o.out.c_str(), s.base_tensors, bake::human_bytes(s.base_bytes).c_str(), s.k_layers, s.v_layers,
              shape.c_str());
  if (s.replaced) std::printf("  replaced %zu rotation tensors of the base (--force)\n", s.replaced);
  std::printf("  max |W*W^T - I|: K %.3g, V %.3g\n", s.k_ortho, s.v_ortho);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "oscar-bake: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--base") o.base = value();
    else if (a == "--rot-dir") o.rot_dir = value();
    else if (a == "--out") o.out = value();
    else if (a == "--k-rot") o.k_rot = value();
    else if (a == "--v-rot") o.v_rot = value();
    else if (a == "--from-gguf") o.from_gguf = value();
    else if (a == "--force") o.force = true;
    else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "oscar-bake: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (o.base.empty() || o.out.empty()) {
    usage(stderr);
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-bake: error: %s\n", e.what());
    return 1;
  }
}
