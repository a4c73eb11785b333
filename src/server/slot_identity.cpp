#include "server/slot_identity.h"

#include <cstring>
#include <fstream>

#include "kv/seq_snapshot.h"

namespace oscar::server {

namespace {

// FNV-1a, 64 bits: no cryptographic claim, only "a different model".
struct Fnv64 {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  template <class T>
  void add_value(const T& v) { add(&v, sizeof v); }
};

uint64_t model_hash(const model::Model& model) {
  const gguf::GgufFile& f = model.file();
  Fnv64 h;
  // The GGUF header: metadata (tokenizer, chat template, hyperparameters)
  // and the tensor directory, read from the file as it is on disk.
  std::ifstream in(f.path(), std::ios::binary);
  std::vector<char> head(f.data_offset());
  if (in.read(head.data(), (std::streamsize)head.size())) h.add(head.data(), head.size());
  h.add_value((uint64_t)f.file_size());
  // Up to 64 bytes at both ends of every tensor's data, from the file (the
  // loaded copy may be repacked for the kernels, or not, with --mmap).
  char buf[64];
  for (const auto& t : f.tensors()) {
    const size_t n = std::min<size_t>(sizeof buf, t.n_bytes);
    for (const size_t at : {(size_t)t.offset, (size_t)t.offset + t.n_bytes - n}) {
      in.clear();
      in.seekg((std::streamoff)(f.data_offset() + at));
      if (in.read(buf, (std::streamsize)n)) h.add(buf, n);
    }
  }
  return h.h;
}

uint64_t rotation_hash(const model::ModelConfig& cfg, const runtime::RotationPlan* plan) {
  Fnv64 h;
  if (!plan) return h.h;
  h.add_value((uint32_t)plan->mode);
  for (size_t l = 0; l < cfg.layers.size(); ++l) {
    const size_t n = (size_t)cfg.layers[l].head_dim * (size_t)cfg.layers[l].head_dim;
    for (const auto* rot : {&plan->k, &plan->v}) {
      const float* m = l < rot->size() ? (*rot)[l] : nullptr;
      h.add_value((uint8_t)(m != nullptr));
      if (m) h.add(m, n * sizeof(float));
    }
  }
  return h.h;
}

std::string store_name(const kv::StoreShape& s) {
  return "layer " + std::to_string(s.layer) + (s.is_v ? " V" : " K");
}

std::string describe_store(const kv::StoreShape& s) {
  std::string d = std::string(kv::cache_type_name(s.main_type)) + ", " + std::to_string(s.n_head_kv) + " heads of " +
                  std::to_string(s.head_dim) + ", rows of " + std::to_string(s.main_row_bytes) + " bytes";
  if (s.ring > 0) return d + ", ring of " + std::to_string(s.ring);
  return d + ", f16 sink " + std::to_string(s.sink) + " + recent " + std::to_string(s.recent);
}

template <class T>
std::string differs(const char* what, const T& saved, const T& here) {
  return std::string(what) + ": the file has " + saved + ", this server " + here;
}

}  // namespace

SlotIdentity slot_identity(const model::Model& model, const kv::KvCache& cache, const runtime::RotationPlan* rotations) {
  const model::ModelConfig& c = model.config();
  const kv::KvCacheConfig& kc = cache.config();
  SlotIdentity id;
  id.arch = c.arch.substr(0, kSlotFileMaxArch);
  id.n_layer = (uint32_t)c.n_layer;
  id.n_vocab = (uint32_t)c.n_vocab;
  id.n_embd = (uint32_t)c.n_embd;
  id.model_hash = model_hash(model);
  id.rotation_mode = rotations ? (uint32_t)rotations->mode : 0;
  id.rotation_hash = rotation_hash(c, rotations);
  id.type_k = (uint32_t)kc.type_k;
  id.type_v = (uint32_t)kc.type_v;
  id.q2_clip_k = kc.q2_k.clip_ratio;
  id.q2_group_k = (uint32_t)kc.q2_k.group_size;
  id.q2_clip_v = kc.q2_v.clip_ratio;
  id.q2_group_v = (uint32_t)kc.q2_v.group_size;
  id.hp_sink = (uint32_t)kc.hp_sink;
  id.hp_recent = (uint32_t)kc.hp_recent;
  id.page_positions = (uint32_t)kc.page_positions;
  id.stores = kv::store_shapes(cache);
  return id;
}

std::string identity_mismatch(const SlotIdentity& saved, const SlotIdentity& here) {
  auto num = [](auto v) { return std::to_string(v); };
  if (saved.arch != here.arch) return differs("model architecture", saved.arch, here.arch);
  if (saved.n_layer != here.n_layer) return differs("model layers", num(saved.n_layer), num(here.n_layer));
  if (saved.n_vocab != here.n_vocab) return differs("vocabulary size", num(saved.n_vocab), num(here.n_vocab));
  if (saved.n_embd != here.n_embd) return differs("embedding width", num(saved.n_embd), num(here.n_embd));
  if (saved.model_hash != here.model_hash)
    return "model: the file was saved from a different model file (its metadata, tokenizer or weights differ)";
  auto type = [](uint32_t t) { return std::string(kv::cache_type_name((kv::CacheType)t)); };
  if (saved.type_k != here.type_k) return differs("K cache type (-ctk)", type(saved.type_k), type(here.type_k));
  if (saved.type_v != here.type_v) return differs("V cache type (-ctv)", type(saved.type_v), type(here.type_v));
  auto rot = [](uint32_t m) {
    return m <= (uint32_t)runtime::RotationMode::Hadamard ? runtime::rotation_mode_name((runtime::RotationMode)m)
                                                          : "unknown";
  };
  if (saved.rotation_mode != here.rotation_mode)
    return differs("KV rotations", std::string(rot(saved.rotation_mode)), std::string(rot(here.rotation_mode)));
  if (saved.rotation_hash != here.rotation_hash) return "KV rotations: the file's rows were stored under other rotation matrices";
  if (saved.q2_group_k != here.q2_group_k || saved.q2_group_v != here.q2_group_v)
    return differs("q2_0 group size (K/V)", num(saved.q2_group_k) + "/" + num(saved.q2_group_v),
                   num(here.q2_group_k) + "/" + num(here.q2_group_v));
  if (std::memcmp(&saved.q2_clip_k, &here.q2_clip_k, sizeof(float)) != 0 ||
      std::memcmp(&saved.q2_clip_v, &here.q2_clip_v, sizeof(float)) != 0)
    return differs("q2_0 clipping ratio (K/V)", num(saved.q2_clip_k) + "/" + num(saved.q2_clip_v),
                   num(here.q2_clip_k) + "/" + num(here.q2_clip_v));
  if (saved.stores.size() != here.stores.size())
    return differs("KV stores", num(saved.stores.size()), num(here.stores.size()));
  for (size_t i = 0; i < saved.stores.size(); ++i)
    if (!(saved.stores[i] == here.stores[i])) {
      const bool tiers = saved.stores[i].sink != here.stores[i].sink || saved.stores[i].recent != here.stores[i].recent;
      return differs(tiers ? "KV tiers (--kv-hp-sink/--kv-hp-recent)" : "KV store", store_name(saved.stores[i]) + " " +
                         describe_store(saved.stores[i]), describe_store(here.stores[i]));
    }
  return "";
}

}  // namespace oscar::server
