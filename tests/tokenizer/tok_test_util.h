// Helpers for the tokenizer tests: the llama.cpp-style case files (.inp:
// cases separated by "\n__ggml_vocab_test__\n"; .out: one line of ids per
// case) and a comparison that reports every mismatching case.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace oscar::tok::testing {

// The merged test-data folder (cmake/test_data.cmake): the repository's
// testdata/ first, then ../shared/data for what the repository cannot carry.
inline std::string shared_data() { return OSCAR_TEST_DATA; }

// The vocabularies and cases the repository carries (testdata/), which every
// test with OSCAR_REQUIRE_SHARED_DATA() reads; absent only when the data
// folders were pointed elsewhere (cmake -DOSCAR_TEST_DATA_DIR=...).
inline bool have_shared_data() {
  for (const char* rel : {"vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-qwen2.gguf.inp",
                          "vocab/ggml-vocab-gemma-4.gguf.inp", "tokenizers/cases.inp", "tokenizers/qwen3/tokenizer.json"})
    if (!std::filesystem::exists(shared_data() + "/" + rel)) return false;
  return true;
}

#define OSCAR_REQUIRE_SHARED_DATA()                                                              \
  do {                                                                                           \
    if (!::oscar::tok::testing::have_shared_data())                                              \
      GTEST_SKIP() << "test data not found at " << ::oscar::tok::testing::shared_data()         \
                   << " (tests labelled shared-data need it; see testdata/README.md)";           \
  } while (0)

// For a file that is not redistributable, so only ../shared/data has it.
#define OSCAR_REQUIRE_TEST_FILE(rel)                                                               \
  do {                                                                                             \
    if (!std::filesystem::exists(::oscar::tok::testing::shared_data() + "/" + (rel)))              \
      GTEST_SKIP() << (rel) << " is not in the repository's testdata/ (see testdata/README.md) "  \
                   << "nor in the shared data set (cmake -DOSCAR_SHARED_DATA_DIR, default ../shared/data)"; \
  } while (0)

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<std::string> read_cases(const std::string& path) {
  const std::string s = read_all(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t next = s.find(sep, pos);
    if (next == std::string::npos) {
      out.push_back(s.substr(pos));
      break;
    }
    out.push_back(s.substr(pos, next - pos));
    pos = next + sep.size();
  }
  // The file's own final newline (or a trailing separator) ends the last case.
  if (!out.empty() && out.back().empty())
    out.pop_back();
  else if (!out.empty() && out.back().back() == '\n')
    out.back().pop_back();
  return out;
}

inline std::vector<std::vector<TokenId>> read_expected(const std::string& path) {
  std::vector<std::vector<TokenId>> out;
  std::istringstream in(read_all(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<TokenId> ids;
    std::istringstream ls(line);
    long long v;
    while (ls >> v) ids.push_back((TokenId)v);
    out.push_back(std::move(ids));
  }
  return out;
}

inline std::string ids_str(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

// Tokenizes every case (no BOS/EOS, special tokens parsed) and expects the
// listed ids; returns the number of exact matches.
inline int check_cases(const Tokenizer& tok, const std::string& inp, const std::string& out) {
  const auto cases = read_cases(inp);
  const auto expected = read_expected(out);
  EXPECT_EQ(cases.size(), expected.size()) << inp << " vs " << out;
  int pass = 0;
  for (size_t i = 0; i < cases.size() && i < expected.size(); ++i) {
    const auto got = tok.tokenize(cases[i], false, true);
    if (got == expected[i]) {
      ++pass;
    } else {
      ADD_FAILURE() << out << " case " << i << " text '" << cases[i] << "'\n  expected:" << ids_str(expected[i])
                    << "\n  got:     " << ids_str(got);
    }
  }
  std::printf("[ cases    ] %s: %d/%zu exact\n", (std::filesystem::path(out).parent_path().filename() / std::filesystem::path(out).filename()).c_str(), pass,
              expected.size());
  return pass;
}

}  // namespace oscar::tok::testing
