// Command-line parameters of oscar-bench, llama-bench style: most flags take
// comma-separated lists and the benchmark runs every combination of them.
#pragma once

#include <string>
#include <vector>

#include "run_settings.h"

#include "kv/cache_type.h"

namespace oscar::bench {

enum class OutputFormat { Markdown, Json, Jsonl, Csv };

struct BenchParams {
  std::vector<std::string> models;
  std::vector<int> n_prompt = {512};
  std::vector<int> n_gen = {128};
  std::vector<int> n_depth = {0};
  std::vector<int> n_threads;  // default: hardware threads (filled by parse)
  std::vector<int> n_batch = {2048};
  std::vector<int> n_ubatch = {512};
  std::vector<kv::CacheType> type_k = {kv::CacheType::F16};
  std::vector<kv::CacheType> type_v = {kv::CacheType::F16};
  int repetitions = 5;
  unsigned seed = 42;  // random token ids: fixed so runs compare like for like
  OutputFormat output = OutputFormat::Markdown;
  int bw_mib = 512;  // bandwidth buffer: far beyond the last-level cache
  bool warmup = true;
  // Fill the depth with random K/V rows stored straight into the cache
  // instead of running the model over random tokens: decode timing does not
  // depend on the values, and a 16K-deep fill then takes seconds, not minutes.
  bool fill_synthetic = false;
  bool verbose = false;
  bool profile = false;  // --profile: runtime::StepProfile of the timed runs, on stderr
  // --interleave: every test is set up first and the repetitions run in
  // rounds across the tests, so ratios between tests do not carry the
  // machine's drift (all tests' caches are held at once).
  bool interleave = false;
  // --sample: how tg tests choose tokens (token_picker.h): off, free, or a
  // JSON Schema / GBNF file; one tg test per item.
  std::vector<std::string> sample = {"off"};
  // --kv-layout: split (each sequence's rows contiguous, as before the pool),
  // pool (pages of a unified pool, the sequence grown alone) or
  // pool-together (two sequences grown a page each in turn, as conversations
  // decoding together); one test per item.
  std::vector<std::string> kv_layout = {"split"};
  bool help = false;
  tools::RunSettings kv;  // only the OSCAR KV fields (--kv-*, LLAMA_KV_*) are used
};

// One benchmark: a pp test (n_gen == 0) or a tg test (n_prompt == 0).
struct TestCase {
  std::string model;
  int n_prompt = 0, n_gen = 0, n_depth = 0;
  int n_threads = 1, n_batch = 2048, n_ubatch = 512;
  kv::CacheType type_k = kv::CacheType::F16, type_v = kv::CacheType::F16;
  std::string sample = "off";  // tg only: see BenchParams::sample
  std::string kv_layout = "split";  // see BenchParams::kv_layout
};

// Throws oscar::Error naming the flag for unknown flags and bad values.
BenchParams parse_bench_params(int argc, char** argv);
std::string bench_usage();

// Every combination, grouped by model (so each model is loaded once) and, as
// llama-bench does, pp and tg as separate tests; a 0 in -p or -n adds none.
std::vector<TestCase> expand_tests(const BenchParams& p);

}  // namespace oscar::bench
