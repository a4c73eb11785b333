// oscar-perplexity --kv-report end to end, on a random qwen3 made by
// oscar-mkmodel (and on the trained oscar-tiny when its GGUF is present):
// an f16 cache is exact in every layer, q2_0 loses a plausible, finite
// amount and more than q8_0, the sample size and the JSON file follow the
// flags, and bad flag combinations are refused with clear messages.
#include <cmath>
#include <vector>

#include "../tools/ppl_test_util.h"

namespace {

using namespace ppl_test;
using KvReportTool = PerplexityTool;

// One row of the report table.
struct LayerRow {
  int layer;
  std::string type_k, type_v;
  long long queries;
  double score_db, out_db, worst_db;
};

double parse_db(const std::string& s) {
  if (s == "inf") return INFINITY;
  return std::stod(s);
}

std::vector<LayerRow> table_rows(const std::string& out) {
  std::vector<LayerRow> rows;
  const std::regex re(R"(^\s*(\d+)\s+(\S+(?: ring)?)\s+(\S+(?: ring)?)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$)");
  std::istringstream in(out.substr(std::min(out.size(), out.find("KV report:"))));
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, re))
      rows.push_back({std::stoi(m[1]), m[2], m[3], std::stoll(m[4]), parse_db(m[5]), parse_db(m[6]), parse_db(m[7])});
  return rows;
}

const std::string kCommon = " -f " + kStories + " -c 128 --chunks 2 --kv-hp-sink 4 --kv-hp-recent 16 --kv-report";

TEST_F(KvReportTool, F16CacheIsExactInEveryLayer) {
  const std::string json = path("f16.json");
  const Result r = ppl("-m " + model("qwen3") + kCommon + " -ctk f16 -ctv f16 --kv-report-json " + json);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;  // the tiny preset has two layers
  for (const LayerRow& l : rows) {
    EXPECT_EQ(l.type_k, "f16");
    EXPECT_TRUE(std::isinf(l.score_db)) << r.out;  // the same f16 rows, the same products
    EXPECT_GT(l.out_db, 100.0) << r.out;           // only float summation order differs
    EXPECT_EQ(l.queries, 2 * (128 - 1 - 64)) << "every scored position of both chunks (fewer than 128)";
  }
  const std::string js = slurp(json);
  EXPECT_NE(js.find("\"score_snr_db\": null"), std::string::npos) << js;
  EXPECT_NE(js.find("\"reference\": \"f16\""), std::string::npos) << js;
  EXPECT_NE(js.find("\"head_out_snr_db\": ["), std::string::npos) << js;
  // Against an f32 reference the f16 cache shows its rounding: high but finite.
  const Result r32 = ppl("-m " + model("qwen3") + kCommon + " -ctk f16 -ctv f16 --kv-report-ref f32");
  ASSERT_EQ(r32.rc, 0) << r32.err;
  for (const LayerRow& l : table_rows(r32.out)) {
    EXPECT_GT(l.score_db, 55.0) << r32.out;
    EXPECT_LT(l.score_db, 100.0) << r32.out;
  }
}

TEST_F(KvReportTool, Q2IsFiniteAndBelowQ8) {
  const Result q2 = ppl("-m " + model("qwen3") + kCommon + " -ctk q2_0 -ctv q2_0");
  const Result q8 = ppl("-m " + model("qwen3") + kCommon + " -ctk q8_0 -ctv q8_0");
  const Result q2plain = ppl("-m " + model("qwen3") + kCommon + " -ctk q2_0 -ctv q2_0 --kv-no-hadamard");
  ASSERT_EQ(q2.rc, 0) << q2.err;
  ASSERT_EQ(q8.rc, 0) << q8.err;
  ASSERT_EQ(q2plain.rc, 0) << q2plain.err;
  EXPECT_NE(q2.out.find("rotations hadamard"), std::string::npos) << q2.out;
  EXPECT_NE(q2plain.out.find("rotations none"), std::string::npos) << q2plain.out;
  const auto a = table_rows(q2.out), b = table_rows(q8.out), c = table_rows(q2plain.out);
  ASSERT_EQ(a.size(), 2u) << q2.out;
  ASSERT_EQ(b.size(), 2u) << q8.out;
  ASSERT_EQ(c.size(), 2u) << q2plain.out;
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    EXPECT_EQ(a[i].type_k, "q2_0");
    EXPECT_EQ(b[i].type_v, "q8_0");
    // q2_0 at d = 64: a few to ~20 dB.
    for (const LayerRow* l : {&a[i], &c[i]}) {
      EXPECT_GT(l->score_db, 3.0) << q2.out;
      EXPECT_LT(l->score_db, 25.0) << q2.out;
      EXPECT_GT(l->out_db, 3.0) << q2.out;
      EXPECT_LT(l->out_db, 30.0) << q2.out;
      EXPECT_LE(l->worst_db, l->out_db + 1e-9);
    }
    EXPECT_GT(b[i].score_db, 35.0) << q8.out;
    EXPECT_GT(b[i].score_db, a[i].score_db + 20.0);
    EXPECT_GT(b[i].out_db, a[i].out_db + 20.0);
  }
}

// The sample: N evenly spaced scored positions per chunk; 0 takes them all.
TEST_F(KvReportTool, QueriesPerChunk) {
  const Result r = ppl("-m " + model("qwen3") + kCommon + " -ctk q4_0 -ctv q4_0 --kv-report-queries 10");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const LayerRow& l : table_rows(r.out)) EXPECT_EQ(l.queries, 20);
  EXPECT_NE(r.out.find("10 queries per chunk"), std::string::npos) << r.out;
  const Result all = ppl("-m " + model("qwen3") + kCommon + " -ctk q4_0 -ctv q4_0 --kv-report-queries 0");
  ASSERT_EQ(all.rc, 0) << all.err;
  for (const LayerRow& l : table_rows(all.out)) EXPECT_EQ(l.queries, 2 * 63);
  // The report only watches: the perplexity is the run's own.
  const Result plain = ppl("-m " + model("qwen3") + " -f " + kStories +
                           " -c 128 --chunks 2 --kv-hp-sink 4 --kv-hp-recent 16 -ctk q4_0 -ctv q4_0");
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_EQ(final_ppl(plain), final_ppl(all));
}

TEST_F(KvReportTool, BadFlagsAreRefused) {
  const std::string m = "-m " + model("qwen3") + " -f " + kStories + " -c 128 --chunks 2 ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--kv-report-json " + path("x.json"), "--kv-report-json needs --kv-report"},
      {"--kv-report-queries 5", "--kv-report-queries needs --kv-report"},
      {"--kv-report-ref f32", "--kv-report-ref needs --kv-report"},
      {"--kv-report --kv-report-queries -3", "--kv-report-queries: expected a count"},
      {"--kv-report --kv-report-queries many", "--kv-report-queries: expected a count"},
      {"--kv-report --kv-report-ref q8_0", "--kv-report-ref: expected f16 or f32"},
      {"--kv-report --kv-report-json " + path("no/such/dir/r.json"), "--kv-report-json: cannot write"},
  };
  for (const auto& [flags, msg] : cases) {
    const Result r = ppl(m + flags);
    EXPECT_NE(r.rc, 0) << flags;
    EXPECT_NE(r.err.find(msg), std::string::npos) << flags << "\n" << r.err;
    EXPECT_EQ(r.out.find("KV report"), std::string::npos) << flags;
  }
}

// The trained model (6 layers, d = 64): the command of the issue runs, and
// the data-free Hadamard beats plain rows on scores. (Its speed is not a
// test's business: on a shared 2-core machine it took from 20 s to 225 s.)
// OSCAR_TINY_MODEL overrides the path; skipped when the GGUF is absent.
TEST_F(KvReportTool, OscarTiny) {
  const char* env = std::getenv("OSCAR_TINY_MODEL");
  const std::string tiny = env && *env ? env : std::string(OSCAR_SOURCE_DIR) + "/models/oscar-tiny/oscar-tiny-f16.gguf";
  const std::string text = std::string(OSCAR_SOURCE_DIR) + "/models/oscar-tiny/heldout.txt";
  if (slurp(tiny).substr(0, 4) != "GGUF") GTEST_SKIP() << tiny << " is not a GGUF file here";
  const std::string common = "-m " + tiny + " -f " + text +
                             " -c 1024 --chunks 2 -ctk q2_0 -ctv q2_0 --kv-hp-sink 4 --kv-hp-recent 64 --kv-report";
  const Result had = ppl(common);
  const Result plain = ppl(common + " --kv-no-hadamard");
  ASSERT_EQ(had.rc, 0) << had.err;
  ASSERT_EQ(plain.rc, 0) << plain.err;
  const auto a = table_rows(had.out), b = table_rows(plain.out);
  ASSERT_EQ(a.size(), 6u) << had.out;
  ASSERT_EQ(b.size(), 6u) << plain.out;
  const double all_had = field(had.out, R"(\n\s+all\s+(\S+))"), all_plain = field(plain.out, R"(\n\s+all\s+(\S+))");
  EXPECT_GT(all_had, all_plain) << had.out << plain.out;
  for (const LayerRow& l : a) {
    EXPECT_TRUE(std::isfinite(l.score_db) && std::isfinite(l.out_db)) << had.out;
    EXPECT_EQ(l.queries, 256);
  }
}

}  // namespace
