// The slot file format (slot_file.h): a file round-trips; every single-bit
// flip and every truncation is refused; structural defects behind a valid
// checksum (what the checksum cannot catch: a file written by a buggy or
// hostile program) are refused with a message naming them; a file from
// another model or cache layout is refused by identity_mismatch(), naming
// what differs; file names and the atomic write (slot_persistence.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "kv/store_shape.h"
#include "server/slot_file.h"
#include "server/slot_identity.h"
#include "server/slot_persistence.h"

namespace oscar::server {
namespace {

SlotIdentity identity() {
  SlotIdentity id;
  id.arch = "qwen3";
  id.n_layer = 2;
  id.n_vocab = 1000;
  id.n_embd = 64;
  id.model_hash = 0x1234567890abcdefull;
  id.rotation_mode = 2;
  id.rotation_hash = 42;
  id.type_k = id.type_v = (uint32_t)kv::CacheType::Q2_0;
  id.q2_clip_k = 0.96f;
  id.hp_sink = 2;
  id.hp_recent = 3;
  id.page_positions = 256;
  for (int l = 0; l < 2; ++l)
    for (bool v : {false, true}) {
      kv::StoreShape s;
      s.layer = l;
      s.is_v = v;
      s.main_type = kv::CacheType::Q2_0;
      s.n_head_kv = 2;
      s.head_dim = 8;
      s.main_row_bytes = 6;
      s.sink = 2;
      s.recent = 3;
      id.stores.push_back(s);
    }
  return id;
}

struct Built {
  std::vector<uint8_t> bytes;
  std::vector<int32_t> tokens, splits;
  std::vector<uint8_t> rows;
  size_t rows_at = 0;
};

// 10 tokens: 2 sink rows, 5 main rows, 3 recent rows per head and store.
Built build(const SlotIdentity& id) {
  Built b;
  b.tokens.resize(10);
  std::iota(b.tokens.begin(), b.tokens.end(), 100);
  b.splits.assign(id.stores.size(), 7);
  uint64_t n = 0;
  for (size_t i = 0; i < id.stores.size(); ++i) n += kv::store_rows_bytes(id.stores[i], 10, 7);
  b.rows.resize(n);
  for (size_t i = 0; i < n; ++i) b.rows[i] = (uint8_t)(i * 7 + 3);
  begin_slot_file(b.bytes, id, b.tokens, b.splits, n);
  b.rows_at = b.bytes.size();
  b.bytes.insert(b.bytes.end(), b.rows.begin(), b.rows.end());
  finish_slot_file(b.bytes);
  return b;
}

// Rewrites the trailing checksum so a structural defect gets past it.
void reseal(std::vector<uint8_t>& f) {
  f.resize(f.size() - 4);
  finish_slot_file(f);
}

std::string refusal(const std::vector<uint8_t>& f) {
  try {
    decode_slot_file(f);
  } catch (const SlotFileError& e) {
    return e.what();
  }
  return "";
}

TEST(SlotFile, RoundTrip) {
  const SlotIdentity id = identity();
  const Built b = build(id);
  const SlotFile f = decode_slot_file(b.bytes);
  EXPECT_EQ(f.identity.arch, "qwen3");
  EXPECT_EQ(f.identity.model_hash, id.model_hash);
  EXPECT_EQ(f.identity.rotation_hash, 42u);
  EXPECT_EQ(f.identity.q2_clip_k, 0.96f);
  EXPECT_EQ(f.identity.hp_recent, 3u);
  EXPECT_EQ(f.identity.stores, id.stores);
  EXPECT_EQ(f.tokens, b.tokens);
  EXPECT_EQ(f.splits, b.splits);
  ASSERT_EQ(f.rows.size(), b.rows.size());
  EXPECT_EQ(0, std::memcmp(f.rows.data(), b.rows.data(), b.rows.size()));
  EXPECT_EQ(f.rows.data(), b.bytes.data() + b.rows_at);
  EXPECT_EQ(identity_mismatch(f.identity, id), "");
  // The layout of docs/slot-files.md: magic, version.
  EXPECT_EQ(0, std::memcmp(b.bytes.data(), "OSCARSLT\x01\0\0\0", 12));
}

TEST(SlotFile, EveryBitFlipIsRefused) {
  const Built b = build(identity());
  for (size_t i = 0; i < b.bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> f = b.bytes;
      f[i] ^= (uint8_t)(1u << bit);
      ASSERT_NE(refusal(f), "") << "byte " << i << " bit " << bit;
    }
}

TEST(SlotFile, EveryTruncationIsRefused) {
  const Built b = build(identity());
  for (size_t n = 0; n < b.bytes.size(); ++n) {
    const std::vector<uint8_t> f(b.bytes.begin(), b.bytes.begin() + (long)n);
    ASSERT_NE(refusal(f), "") << n << " bytes";
  }
  std::vector<uint8_t> longer = b.bytes;
  longer.push_back(0);
  EXPECT_NE(refusal(longer), "");
}

TEST(SlotFile, NamesTheDefect) {
  const Built b = build(identity());
  std::vector<uint8_t> f = b.bytes;
  std::memcpy(f.data(), "GGUF", 4);
  EXPECT_NE(refusal(f).find("not an oscar slot file"), std::string::npos);
  f = b.bytes;
  f[8] = 2;
  EXPECT_NE(refusal(f).find("version 2 is not supported"), std::string::npos);
  f = b.bytes;
  f[b.rows_at + 3] ^= 0x10;
  EXPECT_NE(refusal(f).find("checksum mismatch"), std::string::npos);
  f.assign(b.bytes.begin(), b.bytes.end() - 100);
  EXPECT_NE(refusal(f).find("checksum mismatch"), std::string::npos);
}

// Offsets of fields after the magic and version (docs/slot-files.md).
constexpr size_t kArchLen = 12;
size_t stores_at(const SlotIdentity& id) { return kArchLen + 4 + id.arch.size() + 3 * 4 + 8 + 4 + 8 + 2 * 4 + 4 * 4 + 3 * 4; }

void put_u32(std::vector<uint8_t>& f, size_t at, uint32_t v) { std::memcpy(f.data() + at, &v, 4); }

TEST(SlotFile, StructuralDefectsBehindAValidChecksumAreRefused) {
  const SlotIdentity id = identity();
  const Built b = build(id);
  const size_t n_stores_at = stores_at(id);
  const size_t store0 = n_stores_at + 4;
  const size_t tokens_at = store0 + id.stores.size() * 9 * 4;
  const size_t splits_at = tokens_at + 4 + 10 * 4;
  const size_t rows_count_at = splits_at + id.stores.size() * 4;
  ASSERT_EQ(rows_count_at + 8, b.rows_at);
  struct Case {
    size_t at;
    uint32_t value;
    const char* says;
  };
  const Case cases[] = {
      {kArchLen, 65, "architecture name length 65 exceeds"},
      {kArchLen, 1000, "exceeds"},
      {n_stores_at, 5000, "store count 5000 exceeds"},
      {n_stores_at, 3, "tier split 5 of layer 0 K is impossible"},  // one store fewer: what follows is misread
      {store0, 7, "names layer 7"},                 // layer past n_layer
      {store0 + 4, 2, "store kind"},
      {store0 + 8, 9, "store cache type"},
      {store0 + 12, 0, "no heads"},
      {store0 + 12, 5000, "store KV heads"},
      {store0 + 16, 4096, "store head dim"},
      {store0 + 20, 100000, "store row bytes"},
      {store0 + 32, 4, "sliding-window store cannot have f16 tiers"},
      {tokens_at, 1u << 25, "token count"},
      {tokens_at, 1000000, "truncated in tokens"},
      {tokens_at, 9, "impossible"},            // fewer tokens: the splits no longer fit
      {splits_at, 1, "tier split 1 of layer 0 K is impossible"},
      {splits_at + 4, 11, "tier split 11 of layer 0 V is impossible"},
      {rows_count_at, 5, "bytes of rows declared"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> f = b.bytes;
    put_u32(f, c.at, c.value);
    reseal(f);
    const std::string why = refusal(f);
    EXPECT_NE(why.find(c.says), std::string::npos) << "field at " << c.at << " = " << c.value << ": " << why;
  }
  // Rows missing or extra, with a valid checksum and count.
  std::vector<uint8_t> f(b.bytes.begin(), b.bytes.end() - 5);
  finish_slot_file(f);
  EXPECT_NE(refusal(f).find("bytes of rows present"), std::string::npos);
}

TEST(SlotFile, IdentityMismatchNamesWhatDiffers) {
  const SlotIdentity here = identity();
  auto differ = [&](auto change) {
    SlotIdentity saved = here;
    change(saved);
    return identity_mismatch(saved, here);
  };
  EXPECT_NE(differ([](SlotIdentity& s) { s.arch = "llama"; }).find("model architecture: the file has llama, this server qwen3"),
            std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.n_vocab = 5; }).find("vocabulary size"), std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.model_hash ^= 1; }).find("different model file"), std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.rotation_mode = 0; }).find("KV rotations: the file has none, this server hadamard"),
            std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.rotation_hash = 1; }).find("other rotation matrices"), std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.type_k = (uint32_t)kv::CacheType::F16; })
                .find("K cache type (-ctk): the file has f16, this server q2_0"),
            std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.type_v = (uint32_t)kv::CacheType::Q8_0; }).find("V cache type"),
            std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.q2_clip_k = 0.9f; }).find("clipping"), std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.q2_group_v = 32; }).find("group size"), std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.stores[1].recent = 4; }).find("KV tiers (--kv-hp-sink/--kv-hp-recent)"),
            std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.stores[3].n_head_kv = 4; }).find("layer 1 V"), std::string::npos);
  EXPECT_NE(differ([](SlotIdentity& s) { s.stores.pop_back(); }).find("KV stores"), std::string::npos);
  // The page size does not change what rows mean.
  EXPECT_EQ(differ([](SlotIdentity& s) { s.page_positions = 16; }), "");
}

}  // namespace
}  // namespace oscar::server

namespace oscar::server {
namespace {

TEST(SlotPersistence, FileNamesArePlainNamesOnly) {
  for (const char* ok : {"slot1.bin", "conv-2026 12 05", "a", "x..y"}) EXPECT_TRUE(valid_slot_filename(ok)) << ok;
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b", "c:x", ".hidden", "tab\there", "del\x7f"})
    EXPECT_FALSE(valid_slot_filename(bad)) << bad;
  EXPECT_TRUE(valid_slot_filename(std::string(255, 'a')));
  EXPECT_FALSE(valid_slot_filename(std::string(256, 'a')));
}

// A writer killed in the middle of a large write leaves the final name
// absent (or the old file whole), never a torn file: the bytes go to a
// hidden temporary name first and are renamed only once complete.
TEST(SlotPersistence, WriterKilledMidWriteLeavesNoTornFile) {
  char tmpl[] = "/tmp/oscar-slot-atomic-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::vector<uint8_t> old_file(1000, 7);
  write_file_atomically(dir, "conv.bin", old_file);
  const std::vector<uint8_t> big((size_t)256 << 20, 1);  // takes far longer to write and fsync than the kill below
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      write_file_atomically(dir, "conv.bin", big);
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  // Kill once the temporary file has started to grow.
  bool growing = false;
  for (int i = 0; i < 2000 && !growing; ++i) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind(".conv.bin.tmp-", 0) == 0 && e.file_size() > 0) growing = true;
    if (!growing) usleep(1000);
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(growing) << "the temporary file never appeared";
  EXPECT_TRUE(WIFSIGNALED(status)) << "the write finished before the kill: the test proves nothing";
  // The final name still holds the old file, whole.
  EXPECT_EQ(std::filesystem::file_size(dir + "/conv.bin"), old_file.size());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace oscar::server
