// Shared by the oscar-perplexity tests: runs the tool (and the NumPy
// reference script) in a temporary folder with two tiny random models made by
// oscar-mkmodel, capturing stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace ppl_test {
namespace fs = std::filesystem;

inline const std::string kBin = OSCAR_BIN_DIR;
inline const std::string kStories = std::string(OSCAR_SOURCE_DIR) + "/tests/data/perplexity/stories.txt";
inline const std::string kRefScript = std::string(OSCAR_SOURCE_DIR) + "/tests/tools/ppl_reference.py";

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Result {
  int rc = -1;
  std::string out, err;
};

class PerplexityTool : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("oscar-test-ppl-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
    for (const char* arch : {"qwen3", "llama"}) {
      const std::string cmd = kBin + "/oscar-mkmodel --arch " + arch + " --preset tiny --type f32 --seed 7 -o " +
                              dir_ + "/" + arch + ".gguf 2>/dev/null";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string path(const std::string& name) { return dir_ + "/" + name; }

  // Runs a shell command, capturing stdout and stderr.
  static Result sh(const std::string& cmd) {
    static int n = 0;
    const std::string o = path("out" + std::to_string(n) + ".txt"), e = path("err" + std::to_string(n) + ".txt");
    ++n;
    Result r;
    const int st = std::system((cmd + " >" + o + " 2>" + e).c_str());
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(o);
    r.err = slurp(e);
    return r;
  }
  static Result ppl(const std::string& args) { return sh(kBin + "/oscar-perplexity -t 2 " + args); }

  static std::string model(const std::string& arch) { return path(arch + ".gguf"); }

  static double field(const std::string& text, const std::string& re) {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(re))) {
      ADD_FAILURE() << "no match for /" << re << "/ in:\n" << text;
      return NAN;
    }
    return std::stod(m[1].str());
  }
  static double final_ppl(const Result& r) { return field(r.out, R"(Final estimate: PPL = ([0-9.]+))"); }
  static double mean_kld(const Result& r) { return field(r.out, R"(Mean    KLD:\s+(-?[0-9.e+-]+))"); }

  static std::string dir_;
};
inline std::string PerplexityTool::dir_;

}  // namespace ppl_test
