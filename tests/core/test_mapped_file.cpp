// MappedFile in both residences: the same bytes as the file, read-only, a
// loaded copy aligned for huge pages, and clear errors for missing files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/tmp_dir.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace oscar {
namespace {

std::vector<uint8_t> write_random_file(const std::string& path, size_t n) {
  std::vector<uint8_t> bytes(n);
  std::mt19937 rng(11);
  for (auto& b : bytes) b = (uint8_t)rng();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), (std::streamsize)n);
  return bytes;
}

TEST(MappedFile, BothResidencesHoldTheFileBytes) {
  test::TmpDir t("mapped");
  // Not a multiple of any page size, so the tail of the last page matters.
  const std::string path = t.file("w.bin");
  const auto want = write_random_file(path, (size_t(3) << 20) + 12345);
  for (FileResidence how : {FileResidence::kMapped, FileResidence::kLoaded}) {
    const MappedFile f(path, how);
    EXPECT_EQ(f.residence(), how);
    ASSERT_EQ(f.size(), want.size());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), f.data()));
    EXPECT_EQ(f.path(), path);
  }
  // A loaded copy starts on a 2 MiB boundary, where a huge page can back it.
  const MappedFile loaded(path, FileResidence::kLoaded);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(loaded.data()) % (size_t(2) << 20), 0u);
}

// oscar-server's sleep: the memory goes back to the system (a loaded copy
// reads as zeros, a mapping refaults from the file) and reload() brings the
// same bytes back at the same address; a file changed meanwhile is refused.
TEST(MappedFile, DroppedMemoryComesBackWithTheSameBytes) {
  test::TmpDir t("mapped");
  const std::string path = t.file("w.bin");
  const auto want = write_random_file(path, (size_t(3) << 20) + 12345);
  for (FileResidence how : {FileResidence::kMapped, FileResidence::kLoaded}) {
    MappedFile f(path, how);
    const uint8_t* at = f.data();
    f.drop_resident();
    if (how == FileResidence::kLoaded)
      EXPECT_EQ(std::count(f.data(), f.data() + f.size(), 0), (long)f.size()) << "the copy's pages were given back";
    f.reload();
    EXPECT_EQ(f.data(), at);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), f.data()));
  }
  MappedFile f(path, FileResidence::kLoaded);
  f.drop_resident();
  write_random_file(path, want.size() - 1);
  try {
    f.reload();
    FAIL() << "a changed file was read in place of the one loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed on disk"), std::string::npos) << e.what();
  }
}

TEST(MappedFile, MovesKeepTheBytesAndEmptyTheSource) {
  test::TmpDir t("mapped");
  const std::string path = t.file("w.bin");
  const auto want = write_random_file(path, 5000);
  MappedFile a(path, FileResidence::kLoaded);
  MappedFile b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(b.size(), want.size());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), b.data()));
  MappedFile c;
  c = std::move(b);
  EXPECT_EQ(c.residence(), FileResidence::kLoaded);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), c.data()));
}

TEST(MappedFile, EmptyFileHasNoBytes) {
  test::TmpDir t("mapped");
  const std::string path = t.file("empty.bin");
  write_random_file(path, 0);
  for (FileResidence how : {FileResidence::kMapped, FileResidence::kLoaded}) {
    const MappedFile f(path, how);
    EXPECT_EQ(f.size(), 0u);
  }
}

TEST(MappedFile, LoadedCopyKeepsOneGibFree) {
  constexpr size_t kGib = size_t(1) << 30;
  EXPECT_TRUE(loaded_copy_fits(2 * kGib, 3 * kGib));
  EXPECT_FALSE(loaded_copy_fits(2 * kGib + 1, 3 * kGib));
  EXPECT_FALSE(loaded_copy_fits(1, kGib / 2));  // less than the reserve: no copy at all
  EXPECT_TRUE(loaded_copy_fits(0, kGib));
}

TEST(MappedFile, MissingFileAndDirectoryAreErrors) {
  test::TmpDir t("mapped");
  for (FileResidence how : {FileResidence::kMapped, FileResidence::kLoaded}) {
    try {
      MappedFile f(t.file("nope.bin"), how);
      FAIL() << "no error for a missing file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("nope.bin"), std::string::npos) << e.what();
    }
    EXPECT_THROW(MappedFile(t.dir().string(), how), Error);
  }
}

}  // namespace
}  // namespace oscar
