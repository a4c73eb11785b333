// --grammar / --json-schema on oscar-cli and as oscar-server defaults, with a
// random-weight model on the real Qwen3 vocabulary; outputs validated by
// python3-jsonschema.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "server/client_test_util.h"

using namespace oscar::testing;

namespace {

// stdout of a command, stderr dropped, trailing newlines trimmed.
std::pair<int, std::string> stdout_of(const std::string& cmd) {
  auto r = run_capture("{ { " + cmd + " ; } 2>/dev/null ; }");  // run_capture adds 2>&1 outside
  while (!r.second.empty() && r.second.back() == '\n') r.second.pop_back();
  return r;
}

const char* kSchema = R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "maximum": 9},
  "b": {"enum": ["x", "y"]}, "c": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}}, "required": ["a", "b", "c"]})";

class GrammarFlags : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string tok = std::string(OSCAR_TEST_DATA) + "/tokenizers/qwen3/tokenizer.json";
    if (!std::filesystem::exists(tok)) return;
    dir_ = new TempDir();
    const auto mk = run_capture(kBin + "/oscar-mkmodel --preset tiny --layers 1 --type f16 --tokenizer-json " + tok +
                                " -o " + dir_->file("m.gguf"));
    ASSERT_EQ(mk.first, 0) << mk.second;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "test data absent (see testdata/README.md): the Qwen3 tokenizer is not in " << OSCAR_TEST_DATA;
  }
  static TempDir* dir_;
};
TempDir* GrammarFlags::dir_ = nullptr;

TEST_F(GrammarFlags, CliJsonSchemaOutputsValidate) {
  nlohmann::json cases = nlohmann::json::array();
  nlohmann::json outputs = nlohmann::json::array();
  std::ofstream(dir_->file("schema.json")) << kSchema;
  for (int seed = 1; seed <= 4; ++seed) {
    // -jf for half of the runs, -j for the rest: both spellings work.
    const std::string flag = seed % 2 ? "-jf " + dir_->file("schema.json") : std::string("--json-schema '") + kSchema + "'";
    const auto r = stdout_of(kBin + "/oscar-cli -m " + dir_->file("m.gguf") + " -no-cnv -p P -n 400 -t 2 --seed " +
                             std::to_string(seed) + " " + flag);
    ASSERT_EQ(r.first, 0) << r.second;
    ASSERT_EQ(r.second.substr(0, 1), "P") << r.second;
    outputs.push_back(r.second.substr(1));
  }
  cases.push_back({{"schema", nlohmann::json::parse(kSchema)}, {"outputs", outputs}});
  std::ofstream(dir_->file("out.json")) << cases.dump();
  const auto v = run_capture(std::string(OSCAR_PYTHON) + " " + OSCAR_SOURCE_DIR + "/tests/grammar/validate_json.py " +
                             dir_->file("out.json"));
  EXPECT_EQ(v.first, 0) << v.second;
}

TEST_F(GrammarFlags, CliGrammarAndErrors) {
  const auto ok = stdout_of(kBin + "/oscar-cli -m " + dir_->file("m.gguf") +
                            " -no-cnv -p Q -n 50 -t 2 --grammar 'root ::= (\"yes\" | \"no\") \"!\"'");
  ASSERT_EQ(ok.first, 0) << ok.second;
  EXPECT_TRUE(ok.second == "Qyes!" || ok.second == "Qno!") << ok.second;
  const auto bad = run_capture(kBin + "/oscar-cli -m " + dir_->file("m.gguf") + " -no-cnv -p Q -n 5 --grammar 'root ::= \"a\" ('");
  EXPECT_EQ(bad.first, 1);
  EXPECT_NE(bad.second.find("--grammar: expected ')' at line 1, column 15"), std::string::npos) << bad.second;
  const auto bad_schema = run_capture(kBin + "/oscar-cli -m " + dir_->file("m.gguf") + " -no-cnv -p Q -n 5 -j '{\"type\": \"strin\"}'");
  EXPECT_EQ(bad_schema.first, 1);
  EXPECT_NE(bad_schema.second.find("unknown type 'strin'"), std::string::npos) << bad_schema.second;
}

TEST_F(GrammarFlags, ServerGrammarFlagIsTheDefault) {
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir_->file("m.gguf"), "-c", "1024", "-np", "1", "-t", "2", "--grammar",
                                     "root ::= \"ok\" [0-9]"},
                                    dir_->file("s.log"));
  ASSERT_EQ(err, "");
  // A request without a grammar gets the server's; one with its own uses it.
  const std::string py = std::string(OSCAR_PYTHON) +
                         " -c \"import json,sys,urllib.request as u; "
                         "r=lambda b: json.load(u.urlopen(u.Request(sys.argv[1]+'/completion', json.dumps(b).encode(), "
                         "{'Content-Type': 'application/json'})))['content']; "
                         "print(r({'prompt': 'x', 'n_predict': 10, 'seed': 1}) + '|' + "
                         "r({'prompt': 'x', 'n_predict': 10, 'seed': 1, 'grammar': 'root ::= [a-c]{3}'}))\" " + srv.url();
  const auto r = run_capture(py);
  ASSERT_EQ(r.first, 0) << r.second << srv.log();
  ASSERT_EQ(r.second.size(), 8u) << r.second;  // "okN|abc\n"
  EXPECT_EQ(r.second.substr(0, 2), "ok");
  EXPECT_TRUE(r.second[2] >= '0' && r.second[2] <= '9') << r.second;
  EXPECT_EQ(r.second[3], '|');
  EXPECT_EQ(r.second.substr(4, 3).find_first_not_of("abc"), std::string::npos) << r.second;
  EXPECT_EQ(srv.stop(), 0) << srv.log();
  const auto bad = run_capture("timeout 30 " + kBin + "/oscar-server -m " + dir_->file("m.gguf") +
                               " --port 0 --json-schema '{\"not\": {}}'");
  EXPECT_EQ(bad.first, 1);
  EXPECT_NE(bad.second.find("--json-schema: JSON schema at #: unsupported keyword 'not'"), std::string::npos) << bad.second;
}

}  // namespace
