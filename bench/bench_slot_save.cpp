// oscar-bench-slot-save: the size of a saved slot and the time to save and
// restore it (issue 36), f16 against q2_0, without a model or a server: a
// KvCache of a model's KV shape (default qwen3-0.6b: 28 layers, 8 KV heads
// of 128) gets N positions of random K/V rows through KvCache::store (the
// tier encoding decode uses), then goes through the server's own steps:
//   save:    encode_slot + CRC-32 + write_file_atomically (fsync, rename)
//   restore: read_checked_slot_file (read, CRC, identity, bounds) + import_sequence
// and the restored sequence (the same one, emptied first) is saved again and
// must give the same file (size and CRC-32).
//
//   oscar-bench-slot-save [--n 16384] [-ctk q2_0] [-ctv q2_0] [--sink 512] [--recent 2048]
//                         [--layers 28] [--kv-heads 8] [--head-dim 128] [--dir DIR] [--repeat 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv/seq_snapshot.h"
#include "server/slot_persistence.h"

using namespace oscar;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Args {
  int n = 16384, layers = 28, kv_heads = 8, head_dim = 128, sink = 512, recent = 2048, repeat = 3;
  std::string ctk = "q2_0", ctv = "q2_0", dir = "/tmp/oscar-slot-bench";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    require(i + 1 < argc, "missing value after " + f);
    const std::string v = argv[++i];
    if (f == "--n") a.n = std::stoi(v);
    else if (f == "-ctk") a.ctk = v;
    else if (f == "-ctv") a.ctv = v;
    else if (f == "--sink") a.sink = std::stoi(v);
    else if (f == "--recent") a.recent = std::stoi(v);
    else if (f == "--layers") a.layers = std::stoi(v);
    else if (f == "--kv-heads") a.kv_heads = std::stoi(v);
    else if (f == "--head-dim") a.head_dim = std::stoi(v);
    else if (f == "--dir") a.dir = v;
    else if (f == "--repeat") a.repeat = std::stoi(v);
    else throw Error("unknown flag " + f);
  }
  return a;
}

int run(const Args& a) {
  model::ModelConfig m;
  m.arch = "qwen3";
  m.n_layer = a.layers;
  m.n_vocab = 151936;
  for (int l = 0; l < a.layers; ++l) {
    model::LayerConfig lc;
    lc.n_head = 2 * a.kv_heads;
    lc.n_head_kv = a.kv_heads;
    lc.head_dim = a.head_dim;
    lc.rope_dim = a.head_dim;
    m.layers.push_back(lc);
  }
  kv::KvCacheConfig cfg;
  cfg.type_k = kv::parse_cache_type(a.ctk);
  cfg.type_v = kv::parse_cache_type(a.ctv);
  cfg.n_seq = 1;
  cfg.n_ctx_seq = a.n;
  cfg.hp_sink = kv::is_quantized(cfg.type_k) || kv::is_quantized(cfg.type_v) ? a.sink : 0;
  cfg.hp_recent = kv::is_quantized(cfg.type_k) || kv::is_quantized(cfg.type_v) ? a.recent : 0;
  cfg.pool_positions = a.n;
  const quant::QuantTable table(detect_cpu());
  kv::KvCache cache(m, cfg, table);
  server::SlotIdentity id;
  id.arch = m.arch;
  id.n_layer = (uint32_t)a.layers;
  id.n_vocab = (uint32_t)m.n_vocab;
  id.type_k = (uint32_t)cfg.type_k;
  id.type_v = (uint32_t)cfg.type_v;
  id.hp_sink = (uint32_t)cfg.hp_sink;
  id.hp_recent = (uint32_t)cfg.hp_recent;
  id.page_positions = (uint32_t)cfg.page_positions;
  id.stores = kv::store_shapes(cache);

  // Random rows, as a random-weight model's rotated K/V would be.
  auto t0 = Clock::now();
  require(cache.reserve(0, a.n), "pool too small");
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> k((size_t)a.kv_heads * a.head_dim), v(k.size());
  std::vector<int32_t> tokens;
  for (int p = 0; p < a.n; ++p) {
    for (int l = 0; l < a.layers; ++l) {
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      cache.store(0, l, p, k.data(), v.data());
    }
    cache.commit(0, p + 1);
    tokens.push_back((int32_t)(rng() % (uint32_t)m.n_vocab));
  }
  std::printf("filled %d positions (K %s, V %s, f16 sink %d + recent %d) in %.0f ms\n", a.n, a.ctk.c_str(),
              a.ctv.c_str(), cfg.hp_sink, cfg.hp_recent, ms_since(t0));
  std::filesystem::create_directories(a.dir);
  const std::string name = "bench-" + a.ctk + "-" + a.ctv + ".bin";
  for (int r = 0; r < a.repeat; ++r) {
    t0 = Clock::now();
    std::vector<uint8_t> file = server::encode_slot(cache, 0, tokens, id);
    const double encode_ms = ms_since(t0);
    server::finish_slot_file(file);
    const double crc_ms = ms_since(t0) - encode_ms;
    server::write_file_atomically(a.dir, name, file);
    const double save_ms = ms_since(t0);

    // Restored into the same sequence, emptied: what comes back must come from the file.
    const size_t file_bytes = file.size();
    std::vector<uint8_t> tail(file.end() - 4, file.end());  // the CRC-32 of all the rest
    std::vector<uint8_t>().swap(file);
    cache.clear(0);
    t0 = Clock::now();
    const server::CheckedSlotFile c = server::read_checked_slot_file(a.dir, name, id, a.n);
    const double read_ms = ms_since(t0);
    require(cache.reserve(0, a.n), "pool too small");
    kv::import_sequence(cache, 0, a.n, c.file.splits, c.file.rows);
    const double restore_ms = ms_since(t0);

    std::vector<uint8_t> check = server::encode_slot(cache, 0, tokens, id);
    server::finish_slot_file(check);
    require(check.size() == file_bytes && std::equal(tail.begin(), tail.end(), check.end() - 4),
            "the restored sequence differs from the saved one");
    std::printf("file %zu bytes (%.1f MiB, %.0f bytes/position): save %.0f ms (copy %.0f, crc %.0f, write+fsync %.0f), "
                "restore %.0f ms (read+crc+checks %.0f, import %.0f); restored bytes identical (same CRC-32)\n",
                file_bytes, (double)file_bytes / (1 << 20), (double)file_bytes / a.n, save_ms, encode_ms, crc_ms,
                save_ms - encode_ms - crc_ms, restore_ms, read_ms, restore_ms - read_ms);
  }
  std::filesystem::remove(a.dir + "/" + name);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-bench-slot-save: %s\n", e.what());
    return 1;
  }
}
