// Runs the built oscar-gguf binary: exit codes of verify, and info --json
// output that parses and describes the file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"

namespace oscar::gguf::test {
namespace {

namespace fs = std::filesystem;

struct ToolRun {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string slurp(const fs::path& p) {
  auto b = read_bytes(p);
  return {b.begin(), b.end()};
}

// Runs oscar-gguf with `args` (already shell-quoted), capturing both streams.
ToolRun run_tool(const std::string& args, const fs::path& dir) {
  const fs::path bin = fs::path(OSCAR_BIN_DIR) / "oscar-gguf";
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  std::string cmd = "'";  // appended piecewise: GCC 12 warns falsely on "'" + string
  cmd += bin.string() + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int rc = std::system(cmd.c_str());
  ToolRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

fs::path make_file(const fs::path& dir) {
  const fs::path p = dir / "m.gguf";
  GgufWriter w(p.string());
  w.add_kv("general.architecture", Value::str("llama"));
  w.add_kv("general.bad_utf8", Value::str("\xff\xfe"));
  w.add_kv("general.utf8", Value::str("\xe2\x96\x81ok\n"));
  std::vector<std::string> toks;
  for (int i = 0; i < 100; ++i) toks.push_back("tok" + std::to_string(i));
  w.add_kv("tokenizer.ggml.tokens", Value::string_array(toks));
  w.add_kv("nested", Value::array(ValueType::ARRAY, {Value::i32_array({1, 2})}));
  w.add_tensor("a", TensorType::Q8_0, {32, 2});
  w.add_tensor("b", TensorType::IQ2_XXS, {256});
  w.write_tensor("a", std::vector<uint8_t>(68, 1));
  w.write_tensor("b", std::vector<uint8_t>(66, 2));
  w.finish();
  return p;
}

class OscarGgufTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fs::path(OSCAR_BIN_DIR) / "oscar-gguf"))
      GTEST_SKIP() << "oscar-gguf is not built in " << OSCAR_BIN_DIR;
    dir_ = temp_dir();
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(OscarGgufTool, VerifyValidFile) {
  const auto p = make_file(dir_);
  ToolRun r = run_tool("verify '" + p.string() + "'", dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("OK " + p.string() + ": GGUF v3, 5 keys, 2 tensors", 0), 0u) << r.out;
  EXPECT_CONTAINS(r.out, "copy but not compute with tensor types: iq2_xxs");
}

TEST_F(OscarGgufTool, VerifyRefusesBadFiles) {
  const auto good = read_bytes(make_file(dir_));
  const auto p = dir_ / "bad.gguf";
  // Cut inside the tensor data; cut inside the header; a wrong version.
  std::vector<std::pair<std::vector<uint8_t>, std::string>> cases;
  cases.push_back({{good.begin(), good.end() - 40}, "tensor 'b' data"});
  cases.push_back({{good.begin(), good.begin() + 30}, "offset 8: tensor count 2 is impossible"});
  auto v1 = good;
  v1[4] = 1;
  cases.push_back({v1, "GGUF version 1 is not supported"});
  for (const auto& [bytes, fragment] : cases) {
    write_bytes(p, bytes);
    ToolRun r = run_tool("verify '" + p.string() + "'", dir_);
    EXPECT_EQ(r.status, 1) << fragment;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("gguf: " + p.string() + ": ", 0), 0u) << r.err;
    EXPECT_CONTAINS(r.err, fragment);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
  }
  ToolRun missing = run_tool("verify '" + (dir_ / "nope.gguf").string() + "'", dir_);
  EXPECT_EQ(missing.status, 1);
  EXPECT_CONTAINS(missing.err, "nope.gguf");
}

TEST_F(OscarGgufTool, UsageErrors) {
  EXPECT_EQ(run_tool("", dir_).status, 2);
  EXPECT_EQ(run_tool("frobnicate x.gguf", dir_).status, 2);
  EXPECT_EQ(run_tool("verify", dir_).status, 2);
  EXPECT_EQ(run_tool("info x.gguf --bogus", dir_).status, 2);
  EXPECT_EQ(run_tool("--help", dir_).status, 0);
}

TEST_F(OscarGgufTool, InfoJsonParses) {
  const auto p = make_file(dir_);
  ToolRun r = run_tool("info '" + p.string() + "' --json", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["alignment"], 32);
  ASSERT_EQ(j["metadata"].size(), 5u);
  EXPECT_EQ(j["metadata"][0]["key"], "general.architecture");
  EXPECT_EQ(j["metadata"][0]["value"], "llama");
  EXPECT_EQ(j["metadata"][3]["elem_type"], "string");
  EXPECT_EQ(j["metadata"][3]["value"].size(), 100u);
  EXPECT_EQ(j["metadata"][4]["value"][0][1], 2);
  ASSERT_EQ(j["tensors"].size(), 2u);
  EXPECT_EQ(j["tensors"][0]["type"], "q8_0");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({32, 2}));
  EXPECT_EQ(j["tensors"][0]["n_bytes"], 68);
  EXPECT_EQ(j["tensors"][1]["offset"], 96);
  EXPECT_EQ(j["totals"]["bytes"], 68 + 66);
  EXPECT_EQ(j["totals"]["tensors"], 2);
}

TEST_F(OscarGgufTool, InfoTextAbbreviatesLongArrays) {
  const auto p = make_file(dir_);
  ToolRun r = run_tool("info '" + p.string() + "'", dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "array<string>[100]");
  EXPECT_CONTAINS(r.out, "... 92 more]");
  EXPECT_EQ(r.out.find("tok99"), std::string::npos);
  EXPECT_CONTAINS(r.out, "\"\\xff\\xfe\"");
  EXPECT_CONTAINS(r.out, "\"\xe2\x96\x81ok\\n\"");
  EXPECT_CONTAINS(r.out, "total: 2 tensors");
}

TEST_F(OscarGgufTool, SharedDataFilesVerify) {
  const fs::path model = fs::path(OSCAR_TEST_DATA) / "models" / "stories260K.gguf";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is absent";
  ToolRun r = run_tool("verify '" + model.string() + "'", dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  ToolRun j = run_tool("info --json '" + model.string() + "'", dir_);
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["tensors"].size(), 48u);
}

}  // namespace
}  // namespace oscar::gguf::test
