#include "bake.h"

#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "torchio/rotation_set.h"

namespace fs = std::filesystem;

namespace oscar::bake {

namespace {

constexpr double kOrthoTol = 1e-3;           // docs/OSCAR.md §1 (the loader's check)
constexpr size_t kChunk = (size_t)16 << 20;  // bytes copied per write

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

std::string square(int d) { return std::to_string(d) + "x" + std::to_string(d); }

// Layer coverage, head dims and orthogonality against the base model.
// `expect(layer)` gives the head dim the model wants and the key it comes from.
template <class Expect>
void validate(Rotations& r, int64_t n_blocks, Expect expect) {
  const std::string what = r.kind + " rotation (" + r.source + ")";
  if (r.w.empty()) throw Error(what + " has no layers");
  for (const auto& [id, w] : r.w) {
    if (id >= n_blocks) break;  // reported below
    const auto [want, key] = expect(id);
    const int d = r.dim.at(id);
    if (d != want)
      throw Error(what + " is " + square(d) + (r.dim.size() > 1 && id ? " at layer " + std::to_string(id) : "") +
                  " but the model's head dim (" + key + ") is " + std::to_string(want));
  }
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
    const double err = torchio::orthogonality_error(w, r.dim.at(id));
    if (!(err <= kOrthoTol)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g", err);
      throw Error(what + ": layer " + std::to_string(id) + " is not orthogonal (max |W*W^T - I| = " + buf +
                  " > 1e-3)");
    }
    if (err > r.max_ortho) r.max_ortho = err;
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

}  // namespace

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", n / (double)(1ull << 30));
  else if (n >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", n / (double)(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%" PRIu64 " bytes", n);
  return buf;
}

Rotations from_checkpoint(const std::string& path, const std::string& kind, std::FILE* log) {
  torchio::RotationSet rs = torchio::load_rotation_set(path);
  Rotations r{kind, path, {}, {}, 0};
  for (const auto& [id, m] : rs.rotation) {
    const int d = rs.dims.at(id);
    r.w[id] = torchio::transpose(m, d);
    r.dim[id] = d;
  }
  if (log)
    std::fprintf(log, "oscar-bake: %s rotation: %s (objective %s, %d layers, %s %s)\n", kind.c_str(), path.c_str(),
                 rs.objective.c_str(), rs.n_layers(), rs.dim ? square(rs.dim).c_str() : "mixed head dims",
                 rs.rotation_dtype.c_str());
  return r;
}

Rotations from_gguf(const gguf::GgufFile& g, const std::string& kind, std::FILE* log) {
  Rotations r{kind, g.path(), {}, {}, 0};
  int d0 = 0;
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
    if (!d0) d0 = d;
    auto bytes = g.tensor_data(t);
    std::vector<float> w((size_t)d * d);
    std::memcpy(w.data(), bytes.data(), w.size() * 4);
    r.w[layer] = std::move(w);
    r.dim[layer] = d;
  }
  if (r.w.empty()) throw Error(g.path() + ": has no " + kind + " rotation tensors (blk.N" +
                               (kind == "K" ? ".attn_k_rot.weight)" : ".attn_v_rot.weight)"));
  if (log)
    std::fprintf(log, "oscar-bake: %s rotation: %s (%zu layers, %s F32)\n", kind.c_str(), g.path().c_str(),
                 r.w.size(), square(d0).c_str());
  return r;
}

Rotations from_matrices(const std::map<int, std::vector<float>>& m, const std::map<int, int>& dim,
                        const std::string& kind, const std::string& source) {
  Rotations r{kind, source, {}, {}, 0};
  for (const auto& [id, mat] : m) {
    const int d = dim.at(id);
    require(mat.size() == (size_t)d * d, kind + " rotation of layer " + std::to_string(id) + " is not d*d");
    r.w[id] = torchio::transpose(mat, d);
    r.dim[id] = d;
  }
  return r;
}

BakeSummary bake(const BakeOptions& o, Rotations& k, Rotations& v) {
  if (same_file(o.base, o.out)) throw Error("--out must differ from the input files");
  gguf::GgufFile base = gguf::GgufFile::open(o.base);
  const std::string arch = base.get_string("general.architecture").value_or("");
  if (arch.empty()) throw Error(o.base + ": no general.architecture");
  const auto n_blocks = base.get_int(arch + ".block_count");
  if (!n_blocks || *n_blocks <= 0) throw Error(o.base + ": no " + arch + ".block_count");

  if (!o.layer_dims.empty()) {
    if ((int64_t)o.layer_dims.size() != *n_blocks)
      throw Error(o.base + ": the model config has " + std::to_string(o.layer_dims.size()) + " layers but " + arch +
                  ".block_count is " + std::to_string(*n_blocks));
    auto expect = [&](int id) { return std::pair<int, std::string>(o.layer_dims[(size_t)id], "layer " + std::to_string(id) + ", model config");
    };
    validate(k, *n_blocks, expect);
    validate(v, *n_blocks, expect);
  } else {
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
    validate(k, *n_blocks, [&](int) { return std::pair<int, std::string>((int)*k_dim, k_key); });
    validate(v, *n_blocks, [&](int) { return std::pair<int, std::string>((int)*v_dim, v_key); });
  }

  std::vector<std::string> existing;
  for (const auto& t : base.tensors())
    if (is_rot_tensor(t.name)) existing.push_back(t.name);
  if (!existing.empty() && !o.force)
    throw Error(o.base + " already has rotation tensors (" + existing.front() + ", " +
                std::to_string(existing.size()) + " in all); pass --force to replace them");

  gguf::GgufWriter w(o.out, base.version());
  w.add_metadata_from(base);
  std::vector<const gguf::TensorInfo*> copied;
  BakeSummary sum;
  for (const auto& t : base.tensors()) {
    if (is_rot_tensor(t.name)) continue;
    w.add_tensor(t.name, t.type, t.shape);
    copied.push_back(&t);
    sum.base_bytes += t.n_bytes;
  }
  for (const Rotations* r : {&k, &v})
    for (const auto& [id, m] : r->w) {
      const uint64_t d = (uint64_t)r->dim.at(id);
      w.add_tensor(tensor_name(id, r->kind), TensorType::F32, {d, d});
    }

  const char* pre = o.log_prefix.c_str();
  if (o.log)
    std::fprintf(o.log, "%s: copying %zu tensors (%s) from %s\n", pre, copied.size(),
                 human_bytes(sum.base_bytes).c_str(), o.base.c_str());
  uint64_t done = 0;
  int next_pct = 10;
  for (const gguf::TensorInfo* t : copied) {
    auto data = base.tensor_data(*t);
    for (size_t off = 0; off < data.size(); off += kChunk) {
      w.write_tensor_data(data.subspan(off, std::min(kChunk, data.size() - off)));
      done += std::min(kChunk, data.size() - off);
      if (sum.base_bytes && done * 100 >= (uint64_t)next_pct * sum.base_bytes) {
        if (o.log)
          std::fprintf(o.log, "%s: %3d%% (%s)\n", pre, (int)(done * 100 / sum.base_bytes), human_bytes(done).c_str());
        while (done * 100 >= (uint64_t)next_pct * sum.base_bytes) next_pct += 10;
      }
    }
  }
  for (const Rotations* r : {&k, &v})
    for (const auto& [id, m] : r->w)
      w.write_tensor(tensor_name(id, r->kind), {reinterpret_cast<const uint8_t*>(m.data()), m.size() * sizeof(float)});
  w.finish();

  sum.base_tensors = copied.size();
  sum.replaced = existing.size();
  sum.k_layers = k.w.size();
  sum.v_layers = v.w.size();
  sum.k_ortho = k.max_ortho;
  sum.v_ortho = v.max_ortho;
  return sum;
}

}  // namespace oscar::bake
