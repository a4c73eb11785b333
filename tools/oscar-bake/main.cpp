// oscar-bake: writes a rot-kv GGUF = a base GGUF (all metadata and tensors
// copied byte for byte) plus per-layer OSCAR rotations
//   blk.{i}.attn_k_rot.weight, blk.{i}.attn_v_rot.weight   F32 [d, d] = Mᵀ
// where M is the checkpoint's `rotation` (row-vector convention, x' = x·M), so
// reading the tensor as a linear weight W gives x' = W·x. This mirrors the
// seeds' export_rot_kv_gguf.py (same flags and file names, same tensor names,
// layout and order: base tensors, then every K rotation, then every V
// rotation; no extra metadata keys), and adds the checks that script lacks.
//
// The base is memory-mapped and streamed through the writer in chunks, so a
// 20 GB model needs little RAM; the output appears only when complete.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "torchio/rotation_set.h"

namespace fs = std::filesystem;
using namespace oscar;

namespace {

constexpr const char* kDefaultK = "k_rotation_qqt_r_h_pbr.pt";
constexpr const char* kDefaultV = "v_rotation_sst_r_h_pbr.pt";
constexpr double kOrthoTol = 1e-3;               // shared/DESIGN.md
constexpr size_t kChunk = (size_t)16 << 20;      // bytes copied per write

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

// One kind of rotation (K or V) for every layer, as GGUF stores it: W = Mᵀ.
struct Rotations {
  std::string kind;    // "K" or "V"
  std::string source;  // file it came from
  int d = 0;
  std::map<int, std::vector<float>> w;
  double max_ortho = 0;
};

bool is_rot_tensor(const std::string& name) {
  auto ends = [&](const char* suf) {
    const size_t n = std::strlen(suf);
    return name.size() > n && name.compare(name.size() - n, n, suf) == 0;
  };
  return ends(".attn_k_rot.weight") || ends(".attn_v_rot.weight");
}

std::string tensor_name(int layer, const std::string& kind) {
  return "blk." + std::to_string(layer) + (kind == "K" ? ".attn_k_rot.weight" : ".attn_v_rot.weight");
}

Rotations from_checkpoint(const std::string& path, const std::string& kind) {
  torchio::RotationSet rs = torchio::load_rotation_set(path);
  Rotations r{kind, path, rs.dim, {}, 0};
  for (const auto& [id, m] : rs.rotation) r.w[id] = torchio::transpose(m, rs.dim);
  std::fprintf(stderr, "oscar-bake: %s rotation: %s (objective %s, %d layers, %dx%d %s)\n", kind.c_str(),
               path.c_str(), rs.objective.c_str(), rs.n_layers(), rs.dim, rs.dim, rs.rotation_dtype.c_str());
  return r;
}

Rotations from_gguf(const gguf::GgufFile& g, const std::string& kind) {
  Rotations r{kind, g.path(), 0, {}, 0};
  for (const gguf::TensorInfo& t : g.tensors()) {
    const std::string suffix = kind == "K" ? ".attn_k_rot.weight" : ".attn_v_rot.weight";
    if (t.name.rfind("blk.", 0) != 0 || t.name.size() <= 4 + suffix.size() ||
        t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string num = t.name.substr(4, t.name.size() - 4 - suffix.size());
    if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos)
      throw Error(g.path() + ": unexpected rotation tensor name '" + t.name + "'");
    const int layer = std::stoi(num);
    if (t.type != TensorType::F32 || t.shape.size() != 2 || t.shape[0] != t.shape[1] || t.shape[0] == 0 ||
        t.shape[0] > 16384)
      throw Error(g.path() + ": " + t.name + " is not an F32 square matrix");
    const int d = (int)t.shape[0];
    if (r.d && d != r.d) throw Error(g.path() + ": " + t.name + " is " + std::to_string(d) + "x" +
                                     std::to_string(d) + " but other layers have d = " + std::to_string(r.d));
    r.d = d;
    auto bytes = g.tensor_data(t);
    std::vector<float> w((size_t)d * d);
    std::memcpy(w.data(), bytes.data(), w.size() * 4);
    r.w[layer] = std::move(w);
  }
  if (r.w.empty()) throw Error(g.path() + ": has no " + kind + " rotation tensors (blk.N" +
                               (kind == "K" ? ".attn_k_rot.weight)" : ".attn_v_rot.weight)"));
  std::fprintf(stderr, "oscar-bake: %s rotation: %s (%zu layers, %dx%d F32)\n", kind.c_str(), g.path().c_str(),
               r.w.size(), r.d, r.d);
  return r;
}

// Layer coverage, head dim and orthogonality against the base model.
void validate(Rotations& r, int64_t n_blocks, int64_t head_dim, const std::string& dim_key) {
  const std::string what = r.kind + " rotation (" + r.source + ")";
  if (r.d != head_dim)
    throw Error(what + " is " + std::to_string(r.d) + "x" + std::to_string(r.d) + " but the model's head dim (" +
                dim_key + ") is " + std::to_string(head_dim));
  const int last = r.w.rbegin()->first;
  if (last >= n_blocks)
    throw Error(what + " has layer " + std::to_string(last) + " but the model has " + std::to_string(n_blocks) +
                " blocks");
  if ((int64_t)r.w.size() != n_blocks) {
    int missing = 0;
    while (r.w.count(missing)) ++missing;
    throw Error(what + " covers " + std::to_string(r.w.size()) + " layers but the model has " +
                std::to_string(n_blocks) + " blocks (layer " + std::to_string(missing) + " is missing)");
  }
  for (const auto& [id, w] : r.w) {
    const double err = torchio::orthogonality_error(w, r.d);
    if (!(err <= kOrthoTol)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g", err);
      throw Error(what + ": layer " + std::to_string(id) + " is not orthogonal (max |W*W^T - I| = " + buf +
                  " > 1e-3)");
    }
    if (err > r.max_ortho) r.max_ortho = err;
  }
}

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", n / (double)(1ull << 30));
  else if (n >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", n / (double)(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%" PRIu64 " bytes", n);
  return buf;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

int bake(const Options& o) {
  if (same_file(o.base, o.out) || (!o.from_gguf.empty() && same_file(o.from_gguf, o.out)))
    throw Error("--out must differ from the input files");
  gguf::GgufFile base = gguf::GgufFile::open(o.base);
  const std::string arch = base.get_string("general.architecture").value_or("");
  if (arch.empty()) throw Error(o.base + ": no general.architecture");
  const auto n_blocks = base.get_int(arch + ".block_count");
  if (!n_blocks || *n_blocks <= 0) throw Error(o.base + ": no " + arch + ".block_count");
  std::string k_key = arch + ".attention.key_length";
  std::optional<int64_t> k_dim = base.get_int(k_key);
  if (!k_dim) {
    const auto embd = base.get_int(arch + ".embedding_length");
    const auto heads = base.get_int(arch + ".attention.head_count");
    if (!embd || !heads || *heads <= 0 || *embd % *heads)
      throw Error(o.base + ": cannot tell the head dim (no " + k_key + ", embedding_length/head_count)");
    k_dim = *embd / *heads;
    k_key = arch + ".embedding_length / head_count";
  }
  std::string v_key = arch + ".attention.value_length";
  std::optional<int64_t> v_dim = base.get_int(v_key);
  if (!v_dim) {
    v_dim = k_dim;
    v_key = k_key;
  }

  std::vector<std::string> existing;
  for (const auto& t : base.tensors())
    if (is_rot_tensor(t.name)) existing.push_back(t.name);
  if (!existing.empty() && !o.force)
    throw Error(o.base + " already has rotation tensors (" + existing.front() + ", " +
                std::to_string(existing.size()) + " in all); pass --force to replace them");

  std::optional<gguf::GgufFile> rot_gguf;
  if (!o.from_gguf.empty() && (o.k_rot.empty() || o.v_rot.empty())) rot_gguf = gguf::GgufFile::open(o.from_gguf);
  auto source = [&](const std::string& flag, const char* def, const std::string& kind) {
    if (!flag.empty()) return from_checkpoint(flag, kind);
    if (rot_gguf) return from_gguf(*rot_gguf, kind);
    if (o.rot_dir.empty()) throw Error("no " + kind + " rotation given (--rot-dir, --k-rot/--v-rot or --from-gguf)");
    return from_checkpoint((fs::path(o.rot_dir) / def).string(), kind);
  };
  Rotations k = source(o.k_rot, kDefaultK, "K");
  Rotations v = source(o.v_rot, kDefaultV, "V");
  validate(k, *n_blocks, *k_dim, k_key);
  validate(v, *n_blocks, *v_dim, v_key);

  // Declare: base metadata and tensors (minus replaced rotations), then all K
  // rotations, then all V rotations, as the seeds' script orders them.
  gguf::GgufWriter w(o.out, base.version());
  w.add_metadata_from(base);
  std::vector<const gguf::TensorInfo*> copied;
  uint64_t copy_bytes = 0;
  for (const auto& t : base.tensors()) {
    if (is_rot_tensor(t.name)) continue;
    w.add_tensor(t.name, t.type, t.shape);
    copied.push_back(&t);
    copy_bytes += t.n_bytes;
  }
  for (const Rotations* r : {&k, &v})
    for (const auto& [id, m] : r->w) w.add_tensor(tensor_name(id, r->kind), TensorType::F32, {(uint64_t)r->d, (uint64_t)r->d});

  std::fprintf(stderr, "oscar-bake: copying %zu tensors (%s) from %s\n", copied.size(),
               human_bytes(copy_bytes).c_str(), o.base.c_str());
  uint64_t done = 0;
  int next_pct = 10;
  for (const gguf::TensorInfo* t : copied) {
    auto data = base.tensor_data(*t);
    for (size_t off = 0; off < data.size(); off += kChunk) {
      w.write_tensor_data(data.subspan(off, std::min(kChunk, data.size() - off)));
      done += std::min(kChunk, data.size() - off);
      if (copy_bytes && done * 100 >= (uint64_t)next_pct * copy_bytes) {
        std::fprintf(stderr, "oscar-bake: %3d%% (%s)\n", (int)(done * 100 / copy_bytes), human_bytes(done).c_str());
        while (done * 100 >= (uint64_t)next_pct * copy_bytes) next_pct += 10;
      }
    }
  }
  for (const Rotations* r : {&k, &v})
    for (const auto& [id, m] : r->w)
      w.write_tensor(tensor_name(id, r->kind),
                     {reinterpret_cast<const uint8_t*>(m.data()), m.size() * sizeof(float)});
  w.finish();

  std::printf("wrote %s: %zu base tensors (%s, byte for byte) + %zu K + %zu V rotation tensors (F32 %dx%d)\n",
              o.out.c_str(), copied.size(), human_bytes(copy_bytes).c_str(), k.w.size(), v.w.size(), k.d, k.d);
  if (!existing.empty()) std::printf("  replaced %zu rotation tensors of the base (--force)\n", existing.size());
  std::printf("  max |W*W^T - I|: K %.3g, V %.3g\n", k.max_ortho, v.max_ortho);
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
    return bake(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-bake: error: %s\n", e.what());
    return 1;
  }
}
