// What the client tests share: where the node scripts and the server are,
// and whether node with the openai package is installed.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "server_process.h"

namespace oscar::testing {

inline const std::string kJsDir = std::string(OSCAR_SOURCE_DIR) + "/tests/server/js";
inline const std::string kBin = OSCAR_BIN_DIR;

// Empty when the client tests can run; otherwise why not.
inline std::string node_client_missing() {
  if (run_capture("node --version").first != 0) return "node is not installed (scripts/setup-deps.sh installs it)";
  if (!std::filesystem::exists(kJsDir + "/node_modules/openai"))
    return "tests/server/js/node_modules is missing (run scripts/setup-deps.sh, which runs npm ci there)";
  return "";
}

// Runs one node script (node --test for *.test.mjs) against a server.
inline std::pair<int, std::string> run_node(const std::string& script, const ServerProcess& srv, int n_slots,
                                            int slot_ctx, const std::string& extra_env = "") {
  const bool is_test = script.size() > 9 && script.substr(script.size() - 9) == ".test.mjs";
  const std::string cmd = "cd '" + kJsDir + "' && OSCAR_URL=" + srv.url() + " OSCAR_N_SLOTS=" +
                          std::to_string(n_slots) + " OSCAR_SLOT_CTX=" + std::to_string(slot_ctx) + " " + extra_env +
                          " timeout 120 node " + (is_test ? "--test " : "") + script;
  return run_capture(cmd);
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/oscar-server-test-XXXXXX";
    const char* p = mkdtemp(tmpl);
    path = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

// A suite whose tests share one random tiny qwen3 (oscar-mkmodel), written
// once per suite into a folder of its own. `Suite` only makes the static
// members distinct per suite.
template <class Suite>
class TinyModelSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const auto r = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny -o " + dir_->file("tiny.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string model() { return dir_->file("tiny.gguf"); }
  static inline TempDir* dir_ = nullptr;
};

// The same, skipping each test when the Node client is not installed.
template <class Suite>
class TinyModelClientSuite : public TinyModelSuite<Suite> {
 protected:
  void SetUp() override {
    const std::string why = node_client_missing();
    if (!why.empty()) GTEST_SKIP() << "oscar-server client tests skipped: " << why;
  }
};

}  // namespace oscar::testing
