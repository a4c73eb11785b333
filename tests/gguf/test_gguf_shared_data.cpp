// The real GGUFs in testdata/ (vocab files, a tiny llama) read, and copy
// byte for byte.
#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"

namespace oscar::gguf::test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> shared_ggufs() {
  std::vector<fs::path> out;
  for (const char* sub : {"vocab", "models"}) {
    const fs::path dir = fs::path(OSCAR_TEST_DATA) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gguf") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

#define SKIP_WITHOUT_SHARED_DATA()                                                    \
  if (shared_ggufs().empty())                                                        \
  GTEST_SKIP() << "no .gguf test data under " << OSCAR_TEST_DATA << " (see testdata/README.md)"

TEST(GgufSharedData, AllFilesReadAndCopyIdentically) {
  SKIP_WITHOUT_SHARED_DATA();
  const auto files = shared_ggufs();
  ASSERT_FALSE(files.empty()) << "no .gguf files under " << OSCAR_TEST_DATA;
  auto dir = temp_dir();
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    GgufFile f = GgufFile::open(p.string());
    EXPECT_GE(f.version(), 2u);
    EXPECT_FALSE(f.metadata().empty());
    const Array* tokens = f.get_array("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->elem_type, ValueType::STRING);
    EXPECT_GT(tokens->items.size(), 0u);
    const fs::path copy = dir / p.filename();
    copy_gguf(f, copy.string());
    EXPECT_TRUE(read_bytes(copy) == read_bytes(p)) << "copy differs from the original";
  }
  fs::remove_all(dir);
}

TEST(GgufSharedData, Stories260K) {
  SKIP_WITHOUT_SHARED_DATA();
  const fs::path p = fs::path(OSCAR_TEST_DATA) / "models" / "stories260K.gguf";
  if (!fs::exists(p)) GTEST_SKIP() << p << " is absent";
  GgufFile f = GgufFile::open(p.string());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.tensors().size(), 48u);
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape.size(), 2u);
  const int64_t n_embd = f.get_int_or("llama.embedding_length", -1);
  EXPECT_EQ((int64_t)emb->shape[0], n_embd);
  EXPECT_EQ(emb->shape[1], f.get_array("tokenizer.ggml.tokens")->items.size());
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(f.tensor_data(t).size(), t.n_bytes);
    total += t.n_bytes;
  }
  EXPECT_LE(f.data_offset() + total, f.file_size());
}

}  // namespace
}  // namespace oscar::gguf::test
