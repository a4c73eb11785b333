// oscar-bench runs every combination of its list flags and reports
// llama-bench's fields plus the same-run roofline and memory figures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BenchRun {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

class OscarBench : public ::testing::Test {
 protected:
  static fs::path dir() { return fs::temp_directory_path() / ("oscar-bench-test-" + std::to_string(::getpid())); }
  static std::string model() { return (dir() / "tiny.gguf").string(); }

  static void SetUpTestSuite() {
    fs::create_directories(dir());
    // 256-wide rows so q4_k is really used; two KV heads for GQA; 2 layers so
    // the KV sizes below are easy to state: one position is
    // 2 layers x 2 heads x 64 x (K + V) x 2 bytes = 1024 bytes in f16.
    const std::string cmd = std::string(OSCAR_BIN_DIR) +
                            "/oscar-mkmodel --preset tiny --layers 2 --embd 256 --ffn 512 --heads 4 --kv-heads 2"
                            " --head-dim 64 --type q4_k_m -o " + model() + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir()); }

  // Runs oscar-bench with `args`; the small bandwidth buffer keeps tests quick.
  static BenchRun bench(const std::string& args, bool small_bw = true) {
    const fs::path out = dir() / "out.txt", err = dir() / "err.txt";
    const std::string cmd = std::string(OSCAR_BIN_DIR) + "/oscar-bench " + (small_bw ? "--bw-mib 16 " : "") +
                            args + " >" + out.string() + " 2>" + err.string();
    BenchRun r;
    const int st = std::system(cmd.c_str());
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  static json bench_json(const std::string& args) {
    const BenchRun r = bench(args + " -o json");
    EXPECT_EQ(r.rc, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_TRUE(j.is_array());
    return j;
  }
};

TEST_F(OscarBench, JsonHasLlamaBenchFieldsAndEveryCombination) {
  const json rows = bench_json("-m " + model() + " -p 8,16 -n 4 -d 0,8 -t 1,2 -r 2");
  // (2 pp + 1 tg) x 2 depths x 2 thread counts.
  ASSERT_EQ(rows.size(), 12u);
  std::set<std::tuple<int, int, int, int>> seen;
  for (const json& r : rows) {
    for (const char* f : {"model_filename", "model_type", "model_size", "model_n_params", "n_batch", "n_ubatch",
                          "n_threads", "type_k", "type_v", "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns",
                          "avg_ts", "stddev_ts", "samples_ns", "samples_ts", "cpu_info", "build_commit",
                          "read_bw_gbps", "roofline_ts", "roofline_share", "kv_bytes", "rss_load_bytes",
                          "rss_end_bytes"})
      EXPECT_TRUE(r.contains(f)) << f;
    EXPECT_EQ(r["model_filename"], model());
    EXPECT_EQ(r["type_k"], "f16");
    EXPECT_EQ(r["type_v"], "f16");
    EXPECT_EQ(r["n_batch"], 2048);
    EXPECT_EQ(r["n_ubatch"], 512);
    EXPECT_GT(r["model_size"].get<double>(), 0);
    EXPECT_GT(r["model_n_params"].get<double>(), 0);
    EXPECT_EQ(r["samples_ns"].size(), 2u);
    EXPECT_EQ(r["samples_ts"].size(), 2u);
    EXPECT_GT(r["avg_ts"].get<double>(), 0);
    EXPECT_GT(r["avg_ns"].get<double>(), 0);
    EXPECT_GE(r["stddev_ts"].get<double>(), 0);
    EXPECT_GT(r["roofline_ts"].get<double>(), 0);
    EXPECT_GT(r["kv_bytes"].get<double>(), 0);
    EXPECT_GT(r["rss_end_bytes"].get<double>(), 0);
    const int p = r["n_prompt"], n = r["n_gen"];
    // pp and tg are separate tests, as in llama-bench.
    EXPECT_TRUE((p > 0) != (n > 0)) << p << " " << n;
    if (n > 0) {
      EXPECT_GT(r["read_bw_gbps"].get<double>(), 0);
      EXPECT_GT(r["bytes_per_token"].get<double>(), 0);
    } else {
      EXPECT_GT(r["fma_gflops"].get<double>(), 0);
      EXPECT_GT(r["flops_per_token"].get<double>(), 0);
    }
    seen.insert({p, n, r["n_depth"].get<int>(), r["n_threads"].get<int>()});
  }
  std::set<std::tuple<int, int, int, int>> want;
  for (auto [p, n] : {std::pair{8, 0}, std::pair{16, 0}, std::pair{0, 4}})
    for (int d : {0, 8})
      for (int t : {1, 2}) want.insert({p, n, d, t});
  EXPECT_EQ(seen, want);
}

TEST_F(OscarBench, DepthAndCacheTypeSizeTheCacheAndTheBytesRead) {
  const json rows = bench_json("-m " + model() + " -p 0 -n 4 -d 0,16 -ctk f16,q8_0 -t 1 -r 1");
  ASSERT_EQ(rows.size(), 4u);
  double kv[2][2] = {}, bpt[2][2] = {};
  for (const json& r : rows) {
    const int di = r["n_depth"] == 16 ? 1 : 0, ki = r["type_k"] == "q8_0" ? 1 : 0;
    EXPECT_EQ(r["type_v"], "f16");
    kv[di][ki] = r["kv_bytes"];
    bpt[di][ki] = r["bytes_per_token"];
  }
  // The f16 cache holds depth + generated positions: 4 and 20.
  EXPECT_DOUBLE_EQ(kv[0][0], 4 * 1024.0);
  EXPECT_DOUBLE_EQ(kv[1][0], 20 * 1024.0);
  EXPECT_GT(kv[1][1], kv[0][1]);
  EXPECT_LT(kv[1][1], kv[1][0]);  // q8_0 K rows are smaller than f16
  // Each decode reads 16 more cached positions at depth 16; weights are equal.
  EXPECT_DOUBLE_EQ(bpt[1][0] - bpt[0][0], 16 * 1024.0);
  EXPECT_GT(bpt[1][1] - bpt[0][1], 0);
  EXPECT_LT(bpt[1][1] - bpt[0][1], 16 * 1024.0);
}

// A synthetic fill stores the same positions as running the model does: the
// cache and the bytes a decode reads are identical, for f16 and for q2_0's
// tiers (sink 2 + recent 4 in f16, the rest 2-bit).
TEST_F(OscarBench, SyntheticFillSizesTheCacheLikeTheModelFill) {
  for (const char* t : {"f16", "q2_0"}) {
    const std::string args = "-m " + model() + " -p 0 -n 3 -d 24 -t 1 -r 1 -ctk " + t + " -ctv " + t +
                             " --kv-hp-sink 2 --kv-hp-recent 4";
    const json model_fill = bench_json(args);
    const json synthetic = bench_json(args + " --fill synthetic");
    ASSERT_EQ(model_fill.size(), 1u);
    ASSERT_EQ(synthetic.size(), 1u);
    EXPECT_EQ(synthetic[0]["kv_bytes"], model_fill[0]["kv_bytes"]) << t;
    EXPECT_EQ(synthetic[0]["bytes_per_token"], model_fill[0]["bytes_per_token"]) << t;
    EXPECT_EQ(synthetic[0]["kv_bits_per_value"], model_fill[0]["kv_bits_per_value"]) << t;
    EXPECT_GT(synthetic[0]["avg_ts"].get<double>(), 0) << t;
  }
}

// --kv-layout: the same decode over pool pages (grown alone, or together
// with a second sequence) reads the same cached positions as
// the contiguous layout (same bytes per token and bits per value), in a
// cache that holds both sequences' pages.
TEST_F(OscarBench, PoolLayoutsReadTheSamePositionsAsTheSplitOne) {
  for (const char* t : {"f16", "q2_0"}) {
    const json rows = bench_json("-m " + model() + " -p 0 -n 3 -d 600 -t 1 -r 1 --fill synthetic" +
                                 " --kv-layout split,pool,pool-together -ctk " + t + " -ctv " + t +
                                 " --kv-hp-sink 16 --kv-hp-recent 64");
    ASSERT_EQ(rows.size(), 3u) << t;
    std::map<std::string, json> by;
    for (const json& r : rows) by[r["kv_layout"].get<std::string>()] = r;
    ASSERT_EQ(by.size(), 3u) << t;
    for (const char* pool : {"pool", "pool-together"}) {
      EXPECT_EQ(by[pool]["bytes_per_token"], by["split"]["bytes_per_token"]) << t << " " << pool;
      EXPECT_EQ(by[pool]["kv_bits_per_value"], by["split"]["kv_bits_per_value"]) << t << " " << pool;
      EXPECT_GT(by[pool]["kv_bytes"].get<double>(), by["split"]["kv_bytes"].get<double>()) << t << " " << pool;
      EXPECT_GT(by[pool]["avg_ts"].get<double>(), 0) << t << " " << pool;
    }
  }
  const BenchRun md = bench("-m " + model() + " -p 0 -n 2 -d 300 -t 1 -r 1 --fill synthetic --kv-layout pool-together");
  EXPECT_EQ(md.rc, 0) << md.err;
  EXPECT_NE(md.out.find("tg2 @ d300 [pool-together]"), std::string::npos) << md.out;
  EXPECT_NE(bench("-m " + model() + " -n 2 --kv-layout paged").rc, 0);
}

TEST_F(OscarBench, OtherOutputFormats) {
  const std::string base = "-m " + model() + "," + model() + " -p 8 -n 2 -t 1 -r 1 --no-warmup";
  BenchRun r = bench(base + " -o jsonl");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const json j = json::parse(line);
    EXPECT_GT(j["avg_ts"].get<double>(), 0);
    ++n;
  }
  EXPECT_EQ(n, 4);  // 2 models (comma list) x (pp + tg)

  r = bench(base + " -o csv");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream csv(r.out);
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("build_commit,cpu_info,", 0), 0u) << line;
  EXPECT_NE(line.find(",avg_ts,stddev_ts,"), std::string::npos);
  n = 0;
  while (std::getline(csv, line)) ++n;
  EXPECT_EQ(n, 4);

  r = bench("-m " + model() + " -m " + model() + " -p 8 -n 2 -t 1 -r 1");  // -m repeated, default md
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("| model |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| pp8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| tg2 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ± "), std::string::npos) << r.out;
}

TEST_F(OscarBench, SmallBatchesSplitThePrompt) {
  const json rows = bench_json("-m " + model() + " -p 20 -n 0 -b 8 -ub 3 -d 5 -t 1 -r 1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["n_batch"], 8);
  EXPECT_EQ(rows[0]["n_ubatch"], 3);
  EXPECT_EQ(rows[0]["n_depth"], 5);
  EXPECT_GT(rows[0]["avg_ts"].get<double>(), 0);
}

// The weights are read into memory by default; -mmp 1 (llama-bench's flag)
// maps the file. Both give a result, and the log says which was used.
TEST_F(OscarBench, WeightsAreReadUnlessMmapIsAskedFor) {
  for (const char* mmp : {"", " -mmp 0", " -mmp 1"}) {
    const BenchRun r = bench("-m " + model() + " -p 8 -n 2 -t 1 -r 1 -v" + std::string(mmp));
    ASSERT_EQ(r.rc, 0) << r.err;
    const bool mapped = std::string(mmp) == " -mmp 1";
    EXPECT_NE(r.err.find(mapped ? "mapped from the file" : "read into memory"), std::string::npos)
        << mmp << "\n" << r.err;
  }
}

// --profile: a table per test on stderr, every piece in it; the report on
// stdout unchanged. Weight rates only for the tg test, whose evals read each
// matrix once.
TEST_F(OscarBench, ProfilePrintsEveryPieceOnStderr) {
  const BenchRun r = bench("-m " + model() + " -p 8 -n 4 -r 2 -t 2 --profile -o json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 2u);
  const size_t pp = r.err.find("profile of pp8: 2 evals"), tg = r.err.find("profile of tg4: 8 evals");
  ASSERT_NE(pp, std::string::npos) << r.err;
  ASSERT_NE(tg, std::string::npos) << r.err;
  for (const char* piece : {"attn_in", "attention", "attn_out", "ffn_in", "ffn_down", "logits", "other"}) {
    EXPECT_NE(r.err.find(std::string("| ") + piece + " |", pp), std::string::npos) << piece;
    EXPECT_NE(r.err.find(std::string("| ") + piece + " |", tg), std::string::npos) << piece;
  }
  // The tg table gives the layer matrices a rate; the pp table none.
  const std::string tg_table = r.err.substr(tg), pp_table = r.err.substr(pp, tg > pp ? tg - pp : std::string::npos);
  EXPECT_NE(tg_table.find("% |"), std::string::npos);
  const size_t ffn = tg_table.find("| ffn_in |");
  ASSERT_NE(ffn, std::string::npos);
  const std::string ffn_line = tg_table.substr(ffn, tg_table.find('\n', ffn) - ffn);
  EXPECT_EQ(ffn_line.find("| - |"), std::string::npos) << ffn_line;
  EXPECT_NE(pp_table.find("| ffn_in |"), std::string::npos);
  const std::string pp_ffn = pp_table.substr(pp_table.find("| ffn_in |"));
  EXPECT_NE(pp_ffn.substr(0, pp_ffn.find('\n')).find("| - | - |"), std::string::npos) << pp_ffn;
  // Without the flag, no table.
  EXPECT_EQ(bench("-m " + model() + " -p 0 -n 2 -r 1").err.find("profile of"), std::string::npos);
}

// The "rep N" progress lines of a -v run, as "type_k/type_v N" in the order
// the repetitions ran.
std::vector<std::string> rep_order(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    const size_t rep = line.find(": rep ");
    if (rep == std::string::npos) continue;
    const size_t types = line.rfind(' ', rep);
    const std::string n = line.substr(rep + 6, line.find(' ', rep + 6) - (rep + 6));
    out.push_back(line.substr(types + 1, rep - types - 1) + " " + n);
  }
  return out;
}

// --interleave: all tests set up first, then repetition r of every test in
// turn; each row's ratio_to_first is the median over rounds of its t/s over
// the first test's in the same round. Without it, one test after another
// and no ratio.
TEST_F(OscarBench, InterleaveRunsRoundsAcrossTestsAndReportsRatios) {
  const std::string args = "-m " + model() + " -p 0 -n 2 -d 8 -ctk f16,q8_0,q2_0 -t 1 -r 3 -v";
  BenchRun r = bench(args + " --interleave -o json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> want = {"f16/f16 1", "q8_0/f16 1", "q2_0/f16 1", "f16/f16 2", "q8_0/f16 2",
                                         "q2_0/f16 2", "f16/f16 3", "q8_0/f16 3", "q2_0/f16 3"};
  EXPECT_EQ(rep_order(r.err), want) << r.err;
  const json rows = json::parse(r.out);
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<double> first = rows[0]["samples_ts"].get<std::vector<double>>();
  ASSERT_EQ(first.size(), 3u);
  for (const json& row : rows) {
    const std::vector<double> ts = row["samples_ts"].get<std::vector<double>>();
    ASSERT_EQ(ts.size(), 3u);
    std::vector<double> ratio;
    for (size_t i = 0; i < 3; ++i) ratio.push_back(ts[i] / first[i]);
    std::sort(ratio.begin(), ratio.end());
    EXPECT_NEAR(row["ratio_to_first"].get<double>(), ratio[1], 1e-3 * ratio[1]) << row["type_k"];
  }
  EXPECT_NEAR(rows[0]["ratio_to_first"].get<double>(), 1.0, 1e-9);

  // Markdown: the main table, then the ratios per round.
  r = bench(args + " --interleave");
  ASSERT_EQ(r.rc, 0) << r.err;
  const size_t ratios = r.out.find("Interleaved: t/s against the first test");
  ASSERT_NE(ratios, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("| model |"), ratios);
  for (const char* type : {"| tiny.gguf | tg2 @ d8 | f16 | f16 | 1 | 1.000 1.000 1.000 | 1.000 |",
                           "| tiny.gguf | tg2 @ d8 | q8_0 | f16 | 1 |", "| tiny.gguf | tg2 @ d8 | q2_0 | f16 | 1 |"})
    EXPECT_NE(r.out.find(type, ratios), std::string::npos) << type << "\n" << r.out;

  // One test after another without the flag.
  r = bench(args + " -o json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> serial = {"f16/f16 1", "f16/f16 2", "f16/f16 3", "q8_0/f16 1", "q8_0/f16 2",
                                           "q8_0/f16 3", "q2_0/f16 1", "q2_0/f16 2", "q2_0/f16 3"};
  EXPECT_EQ(rep_order(r.err), serial) << r.err;
  for (const json& row : json::parse(r.out)) EXPECT_EQ(row["ratio_to_first"].get<double>(), 0.0);
}

// --sample puts the sampler (and a grammar) inside the timed decode loop: one
// tg test per mode, named after it. Under `root ::= "a"` every sampled token
// completes a document, so the grammar restarts once per generated token
// (warm-up included); free sampling completes none.
TEST_F(OscarBench, SampleModesRunTheSamplerAndTheGrammar) {
  const fs::path g = dir() / "a.gbnf";
  std::ofstream(g) << "root ::= \"a\"\n";
  const BenchRun r = bench("-m " + model() + " -p 0 -n 6 -r 2 -t 1 -v -o json --sample off,free," + g.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  const json rows = json::parse(r.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["sample"], "off");
  EXPECT_EQ(rows[1]["sample"], "free");
  EXPECT_EQ(rows[2]["sample"], g.string());
  for (const json& row : rows) EXPECT_GT(row["pick_ns_per_token"].get<double>(), 0) << row["sample"];
  EXPECT_NE(r.err.find("tg6 +free: sampled; grammar documents completed 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tg6 +a.gbnf: sampled; grammar documents completed 13"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tg6: sampled"), std::string::npos) << "off does not sample";

  const std::pair<std::string, std::string> bad[] = {
      {"--sample /nonexistent.json", "--sample: cannot read '/nonexistent.json'"},
      {"--sample " + (dir() / "bad.gbnf").string(), "bad.gbnf: --grammar:"},
  };
  std::ofstream(dir() / "bad.gbnf") << "root ::= (\n";
  for (const auto& [args, msg] : bad) {
    const BenchRun b = bench("-m " + model() + " -p 0 -n 2 -r 1 " + args);
    EXPECT_NE(b.rc, 0) << args;
    EXPECT_NE(b.err.find(msg), std::string::npos) << args << "\nstderr: " << b.err;
  }
}

TEST_F(OscarBench, BadFlagsFailWithAClearMessage) {
  const std::string m = "-m " + model() + " ";
  const std::pair<std::string, std::string> cases[] = {
      {m + "--bogus", "unknown argument: --bogus"},
      {m + "-p 12x", "-p: '12x' is not an integer"},
      {m + "-n 4,,8", "-n: empty item"},
      {m + "-d -1", "-d: -1 is out of range"},
      {m + "-t 0", "-t: 0 is out of range"},
      {m + "-r 0", "-r: 0 is out of range"},
      {m + "-ctk q9_9", "-ctk:"},
      {m + "-ctv", "-ctv: missing value"},
      {m + "-o xml", "unknown output format 'xml'"},
      {m + "--fill random", "--fill: expected model or synthetic, got 'random'"},
      {m + "-mmp", "-mmp: missing value"},
      {m + "-p 0 -n 0", "nothing to measure"},
      {"-p 8", "missing -m MODEL"},
      {"-m /nonexistent/model.gguf -r 1", "/nonexistent/model.gguf"},
  };
  for (const auto& [args, msg] : cases) {
    const BenchRun r = bench(args);
    EXPECT_NE(r.rc, 0) << args;
    EXPECT_NE(r.err.find(msg), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty() || r.out.find("avg_ts") == std::string::npos) << args;
  }
  const BenchRun h = bench("--help", false);
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("-ctk"), std::string::npos);
}

}  // namespace
