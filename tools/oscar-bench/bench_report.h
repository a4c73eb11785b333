// One measured row of oscar-bench and its printers. Field names follow
// llama-bench's JSON so existing scripts read both; the oscar_* extras carry
// the roofline and memory figures measured in the same run.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_params.h"
#include "runtime/step_profile.h"

namespace oscar::bench {

struct ResultRow {
  // Identity of the test (llama-bench fields).
  std::string build_commit, cpu_info, model_filename, model_type, test_time;
  uint64_t model_size = 0, model_n_params = 0;
  TestCase test;
  std::vector<uint64_t> samples_ns;

  // The limit measured right before the repetitions, with the same pool:
  // tg: memory read bandwidth and bytes read per token;
  // pp: f32 FMA peak and FLOPs per prompt token.
  double read_bw_gbps = 0, fma_gflops = 0;
  double bytes_per_token = 0, flops_per_token = 0;
  double roofline_ts = 0;  // tokens/s the limit allows

  // Memory: resident set after the model load and after this test.
  uint64_t kv_bytes = 0, rss_load_bytes = 0, rss_end_bytes = 0;
  double kv_bits_per_value = 0;  // effective, all tiers, at the end of the test

  // --interleave: the median over rounds of this test's t/s over the first
  // test's in the same round (0 when the tests ran one after another).
  double ratio_to_first = 0;

  // tg: mean time per token spent choosing the next token (sampling and the
  // grammar under --sample; drawing a random id otherwise), inside t/s.
  double pick_ns_per_token = 0;

  // Derived from samples_ns (tokens/s per sample; mean and sample std).
  std::vector<double> samples_ts() const;
  double avg_ns() const;
  double stddev_ns() const;
  double avg_ts() const;
  double stddev_ts() const;
  double roofline_share() const { return roofline_ts > 0 ? avg_ts() / roofline_ts : 0; }
  int n_tokens() const { return test.n_prompt + test.n_gen; }
  std::string test_name() const;  // "pp512", "tg128", "pp512 @ d4096"
};

// Streaming printers: begin() before the first row, row() as each finishes
// (so jsonl and csv stream), end() after the last.
class Printer {
 public:
  virtual ~Printer() = default;
  virtual void begin() {}
  virtual void row(const ResultRow& r) = 0;
  virtual void end() {}
};

std::unique_ptr<Printer> make_printer(OutputFormat f, std::FILE* out);

// The table `--profile` prints for one test: each piece's time per eval and
// its share of the eval; for a tg test also the weight bytes it reads, the
// rate it read them at, and that rate as a share of the test's probe.
std::string profile_table(const ResultRow& r, const runtime::StepProfile& p,
                          const std::array<double, runtime::StepProfile::kCount>& weight_bytes);

// --interleave: sets each row's ratio_to_first from its samples (rows in test
// order, samples in round order).
void set_ratios_to_first(std::vector<ResultRow>& rows);

// --interleave, markdown: each test's t/s against the first test's, per
// round and the median, as a table to print after the main one.
std::string ratio_table(const std::vector<ResultRow>& rows);

// Exposed for tests of the escaping; JSON string literal with quotes.
std::string json_string(const std::string& s);

}  // namespace oscar::bench
