// The start-up check that a quantized KV cache's f16 tiers leave room for
// its quantized tier in each slot.
#include <gtest/gtest.h>

#include "server/cache_tiers.h"

using namespace oscar;
using namespace oscar::server;

namespace {

kv::KvCacheConfig q2(int n_ctx_slot, int sink, int recent) {
  kv::KvCacheConfig c;
  c.type_k = c.type_v = kv::CacheType::Q2_0;
  c.n_ctx_seq = n_ctx_slot;
  c.hp_sink = sink;
  c.hp_recent = recent;
  return c;
}

}  // namespace

TEST(CacheTiers, DefaultTiersInSmallSlotsMakeTheQuantizedTierUnreachable) {
  // The case: -np 4 -c 4096 with the q2_0 defaults (sink 512, recent 2048).
  const CacheTierReport r = check_cache_tiers(q2(1024, 512, 2048), 4096, 4);
  EXPECT_TRUE(r.quantized);
  EXPECT_EQ(r.quantized_positions, 0);
  for (const char* part : {"unreachable", "512", "2048", "1024", "-c 4096", "-np 4", "--kv-hp-sink", "q2_0"})
    EXPECT_NE(r.warning.find(part), std::string::npos) << part << ": " << r.warning;
  EXPECT_EQ(to_json(r).at("warning"), r.warning);
}

TEST(CacheTiers, TinyQuantizedTierIsWarnedAbout) {
  const CacheTierReport r = check_cache_tiers(q2(1024, 300, 500), 4096, 4);
  EXPECT_EQ(r.quantized_positions, 224);
  EXPECT_NE(r.warning.find("tiny"), std::string::npos) << r.warning;
  EXPECT_NE(r.warning.find("224"), std::string::npos) << r.warning;
}

TEST(CacheTiers, RoomyOrFloatCachesAreFine) {
  EXPECT_EQ(check_cache_tiers(q2(4096, 512, 2048), 16384, 4).warning, "");
  EXPECT_EQ(check_cache_tiers(q2(4096, 512, 2048), 16384, 4).quantized_positions, 1536);
  kv::KvCacheConfig f16;
  f16.n_ctx_seq = 100;
  const CacheTierReport r = check_cache_tiers(f16, 400, 4);
  EXPECT_FALSE(r.quantized);
  EXPECT_EQ(r.warning, "");
  EXPECT_FALSE(to_json(r).contains("warning"));
}
