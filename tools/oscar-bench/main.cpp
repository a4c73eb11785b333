// oscar-bench: prompt-processing and generation speed, llama-bench style, with
// each figure set against the machine's limit measured in the same run.
//
//   oscar-bench -m model.gguf -p 512 -n 128 -d 0,4096 -t 2 -ctk f16,q8_0 -o json
//
// pp tests time prompt tokens d..d+p (batched, -b/-ub); tg tests time n
// single-token decodes after depth d. The depth is filled with random tokens
// first, untimed, as llama-bench -d does. Beside tg the tool reports memory
// read bandwidth (the better of a probe before and one after the
// repetitions) and the roofline decode speed (bandwidth / bytes read per
// token); beside pp the f32 FMA peak and the compute-bound speed.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_params.h"
#include "bench_report.h"
#include "core/error.h"
#include "core/log.h"
#include "engine.h"
#include "kernels/roofline.h"
#include "runtime/forward.h"
#include "token_picker.h"
#include "../common/tool_main.h"

#ifndef OSCAR_BUILD_COMMIT
#define OSCAR_BUILD_COMMIT "unknown"
#endif

using namespace oscar;
using namespace oscar::bench;

namespace {

using Clock = std::chrono::steady_clock;

uint64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

std::string cpu_info() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      return c == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", c + 1));
    }
  return "unknown";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// llama.cpp's names for general.file_type (the mostly-type of the weights).
std::string file_type_name(int64_t ft) {
  static const std::map<int64_t, const char*> names = {
      {0, "all F32"},       {1, "F16"},           {2, "Q4_0"},          {3, "Q4_1"},
      {7, "Q8_0"},          {8, "Q5_0"},          {9, "Q5_1"},          {10, "Q2_K - Medium"},
      {11, "Q3_K - Small"}, {12, "Q3_K - Medium"}, {13, "Q3_K - Large"}, {14, "Q4_K - Small"},
      {15, "Q4_K - Medium"}, {16, "Q5_K - Small"}, {17, "Q5_K - Medium"}, {18, "Q6_K"},
      {32, "BF16"}};
  auto it = names.find(ft);
  return it != names.end() ? it->second : "ftype " + std::to_string(ft);
}

// What one model costs per token, from its weight tables.
struct ModelStats {
  uint64_t size = 0, n_params = 0;
  std::string type;
  // Weight bytes of each piece of a step (runtime::piece_weight_bytes): the
  // layer matrices and the output matrix.
  std::array<double, runtime::StepProfile::kCount> piece_bytes{};
  double layer_weight_bytes = 0;  // every layer matrix
  double layer_macs = 0;          // multiply-adds of every layer matrix, per token
  double output_bytes = 0, embd_row_bytes = 0;
  double output_macs = 0;
};

double matrix_macs(const kernels::WeightMatrix& w) { return (double)w.rows * (double)w.cols; }

ModelStats model_stats(const model::Model& m) {
  ModelStats s;
  for (const auto& t : m.file().tensors()) {
    s.size += t.n_bytes;
    s.n_params += t.n_elements();
  }
  const auto& f = m.file();
  const std::string label = f.get_string_or("general.size_label", "");
  char params[32];
  std::snprintf(params, sizeof params, s.n_params >= 1000000000ull ? "%.1fB" : "%.0fM",
                s.n_params >= 1000000000ull ? s.n_params / 1e9 : s.n_params / 1e6);
  s.type = m.config().arch + " " + (label.empty() ? std::string(params) : label) + " " +
           file_type_name(f.get_int_or("general.file_type", -1));
  s.piece_bytes = runtime::piece_weight_bytes(m);
  s.output_bytes = s.piece_bytes[runtime::StepProfile::kLogits];
  for (int i = 0; i < runtime::StepProfile::kCount; ++i)
    if (i != runtime::StepProfile::kLogits) s.layer_weight_bytes += s.piece_bytes[(size_t)i];
  for (const auto& l : m.weights().layers)
    for (const kernels::WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down})
      s.layer_macs += matrix_macs(*w);
  s.output_macs = matrix_macs(m.weights().output);
  s.embd_row_bytes = (double)m.weights().tok_embd.row_bytes;
  return s;
}

// Per token of a tg test: all weight bytes touched (every layer matrix, the
// output matrix, one embedding row) plus the cache bytes attention reads.
// Token i of the test reads the d+i positions cached before it; the cache's
// own accounting (usage().bytes, tiers included) at depth d and at d+n gives
// the mean, exact for a layout linear in positions.
double tg_bytes_per_token(const ModelStats& s, const TestCase& t, double kv_at_depth, double kv_at_end) {
  const double n = t.n_gen;
  const double mean_kv = kv_at_depth + (kv_at_end - kv_at_depth) * (n - 1) / (2 * n);
  return s.layer_weight_bytes + s.output_bytes + s.embd_row_bytes + mean_kv;
}

// Per prompt token of a pp test: 2 FLOPs per multiply-add of the layer
// matrices, attention (QK^T and PV over the mean number of keys), and the
// output matrix for the one token per logical batch that returns logits.
double pp_flops_per_token(const ModelStats& s, const model::ModelConfig& c, const TestCase& t) {
  const double mean_keys = t.n_depth + (t.n_prompt + 1) / 2.0;
  double attn = 0;
  for (const auto& l : c.layers) attn += 4.0 * l.n_head * l.head_dim * mean_keys;
  const double n_logits = (double)((t.n_prompt + t.n_batch - 1) / t.n_batch);
  return 2.0 * s.layer_macs + attn + 2.0 * s.output_macs * n_logits / t.n_prompt;
}

// The engine (weights, rotation plan) and the same-run figures of one model.
struct LoadedModel {
  std::unique_ptr<tools::Engine> engine;
  ModelStats stats;
  uint64_t rss_load = 0;
};

// One test from set-up to result: its cache filled to the depth and warmed
// up, then timed repetitions on demand, then its figures. Several can be
// alive at once (--interleave), each with its own cache.
class TestRun {
 public:
  TestRun(const BenchParams& p, const Logger& log, const LoadedModel& lm, ThreadPool& pool, const TestCase& t,
          ResultRow base)
      : p_(p), log_(log), m_(lm.engine->model()), stats_(lm.stats), pool_(pool), t_(t), r_(std::move(base)),
        cpu_(lm.engine->cpu()), rng_(p.seed), token_(0, m_.config().n_vocab - 1),
        picker_(t.sample, lm.engine->tokenizer(), m_.config().n_vocab, p.seed) {
    tools::RunSettings s = p_.kv;
    s.cache_k = t.type_k;
    s.cache_v = t.type_v;
    const int n_ctx = t.n_depth + t.n_prompt + t.n_gen;
    if (t.kv_layout != "split") {
      // A unified pool holding two sequences' pages (the same memory either
      // way). pool: sequence 0 takes its pages first, as a conversation
      // growing alone. pool-together: the two take a page each in turn, as
      // two conversations decoding together (where the allocator places
      // their pages decides how many runs the attention reads).
      const int page = kv::KvCacheConfig{}.page_positions;
      cache_ = lm.engine->make_cache(s, 2, n_ctx, 2 * ((n_ctx + page - 1) / page) * page);
      const int step = t.kv_layout == "pool-together" ? page : n_ctx;
      for (int n = step; n < n_ctx + step; n += step)
        for (int seq : {0, 1}) require(cache_->reserve(seq, std::min(n, n_ctx)), "--kv-layout: the pool is short");
    } else {
      cache_ = lm.engine->make_cache(s, 1, n_ctx);
    }
    r_.kv_bytes = cache_->bytes_allocated();
    runtime::ForwardOptions options = lm.engine->forward_options(s);
    if (p_.profile) options.profile = &profile_;
    fwd_ = std::make_unique<runtime::Forward>(m_, *cache_, pool_, options);

    log_.info("  " + r_.test_name() + ": filling depth " + std::to_string(t.n_depth) +
              (p_.fill_synthetic ? " (synthetic K/V)" : ""));
    if (p_.fill_synthetic) fill_synthetic(t.n_depth);
    else prompt(0, t.n_depth, false);
    if (p_.warmup) {  // first touch of weights and scratch, outside the timing
      if (t.n_prompt > 0) prompt(t.n_depth, std::min(t.n_prompt, ub()), true);
      else generate(t.n_depth, 1);
      cache_->truncate(0, t.n_depth);
    }
    kv_at_depth_ = (double)cache_->usage(0).bytes;
    if (t.n_gen > 0) {
      r_.read_bw_gbps = kernels::measure_read_bandwidth(pool_, cpu_, (size_t)p_.bw_mib << 20);
    } else {
      r_.fma_gflops = kernels::measure_fma_peak(pool_, cpu_);
      r_.flops_per_token = pp_flops_per_token(stats_, m_.config(), t);
      r_.roofline_ts = r_.fma_gflops * 1e9 / r_.flops_per_token;
    }
    profile_.clear();  // only the timed runs
    pick_ns_ = picks_ = 0;
  }

  // One timed repetition from the depth.
  void repeat() {
    cache_->truncate(0, t_.n_depth);
    const auto t0 = Clock::now();
    if (t_.n_prompt > 0) prompt(t_.n_depth, t_.n_prompt, true);
    else generate(t_.n_depth, t_.n_gen);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    r_.samples_ns.push_back((uint64_t)ns);
    log_.info("  " + r_.test_name() + " " + kv::cache_type_name(t_.type_k) + "/" + kv::cache_type_name(t_.type_v) +
              ": rep " + std::to_string(r_.samples_ns.size()) + " " +
              std::to_string(1e9 * r_.n_tokens() / (double)ns) + " t/s");
  }

  ResultRow finish() {
    if (t_.n_gen > 0) {
      // The probe is taken again after the repetitions and the higher figure
      // kept: on a shared machine one probe can land in a busy moment and
      // would then flatter the share of roofline.
      r_.read_bw_gbps =
          std::max(r_.read_bw_gbps, kernels::measure_read_bandwidth(pool_, cpu_, (size_t)p_.bw_mib << 20));
      r_.bytes_per_token = tg_bytes_per_token(stats_, t_, kv_at_depth_, (double)cache_->usage(0).bytes);
      r_.roofline_ts = r_.read_bw_gbps * 1e9 / r_.bytes_per_token;
    }
    if (t_.sample != "off")
      log_.info("  " + r_.test_name() + ": sampled; grammar documents completed " +
                std::to_string(picker_.documents_completed()));
    r_.pick_ns_per_token = picks_ > 0 ? (double)pick_ns_ / (double)picks_ : 0;
    r_.kv_bits_per_value = cache_->usage(0).bits_per_value;
    log_.info("  " + r_.test_name() + ": KV " + std::to_string(r_.kv_bits_per_value).substr(0, 5) + " bits/value");
    r_.rss_end_bytes = rss_bytes();
    if (p_.profile) std::fputs(profile_table(r_, profile_, stats_.piece_bytes).c_str(), stderr);
    return r_;
  }

 private:
  int ub() const { return std::min(t_.n_batch, t_.n_ubatch); }

  // Positions [from, from+count) in logical batches of -b, each split into
  // forward calls of -ub; only the last token of a logical batch returns
  // logits (what llama_decode does for a plain prompt batch).
  void prompt(int from, int count, bool logits) {
    std::vector<runtime::BatchToken> batch;
    for (int lb = from; lb < from + count; lb += t_.n_batch) {
      const int le = std::min(from + count, lb + t_.n_batch);
      for (int b = lb; b < le; b += ub()) {
        batch.clear();
        for (int i = b; i < std::min(le, b + ub()); ++i) batch.push_back({token_(rng_), 0, i, logits && i + 1 == le});
        fwd_->eval(batch);
      }
    }
  }
  // Each step's token comes from the picker (random ids unless --sample),
  // so sampling and grammar masks are inside the timed loop.
  void generate(int from, int count) {
    int32_t id = token_(rng_);
    for (int i = from; i < from + count; ++i) {
      const float* logits = fwd_->eval({{id, 0, i, true}}).data();
      const auto t0 = Clock::now();
      id = picker_.next(logits);
      pick_ns_ += (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
      ++picks_;
    }
  }

  // Synthetic fill: unit-normal rows for every layer that stores its own
  // KV, cycled from a pool (drawing 10^9 normals would dominate the run).
  void fill_synthetic(int depth) {
    constexpr int kPool = 1021;
    const model::ModelConfig& c = m_.config();
    int width = 0;
    for (const auto& l : c.layers) width = std::max(width, l.n_head_kv * l.head_dim);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> rows((size_t)(kPool + 1) * width);
    for (float& x : rows) x = nd(rng_);
    for (int pos = 0, r = 0; pos < depth; ++pos) {
      for (int il = 0; il < c.n_layer; ++il, r = (r + 2) % kPool)
        if (cache_->has_own_store(il))
          cache_->store(0, il, pos, &rows[(size_t)r * width], &rows[(size_t)(r + 1) * width]);
      cache_->commit(0, pos + 1);
    }
  }

  const BenchParams& p_;
  const Logger& log_;
  const model::Model& m_;
  const ModelStats& stats_;
  ThreadPool& pool_;
  const TestCase t_;
  ResultRow r_;
  const CpuFeatures& cpu_;
  std::mt19937 rng_;
  std::uniform_int_distribution<int32_t> token_;
  TokenPicker picker_;
  std::unique_ptr<kv::KvCache> cache_;
  runtime::StepProfile profile_;
  std::unique_ptr<runtime::Forward> fwd_;
  double kv_at_depth_ = 0;
  uint64_t pick_ns_ = 0, picks_ = 0;  // time choosing tokens in the timed runs (--sample)
};

// Models and thread pools for the tests. One at a time unless told to keep
// them all (--interleave keeps every test's context alive).
class Runner {
 public:
  Runner(const BenchParams& p, const Logger& log) : p_(p), log_(log), cpu_info_(cpu_info()) {}

  std::unique_ptr<TestRun> start(const TestCase& t, bool keep_others) {
    // The engine fixes its rotation plan (q2_0 or not) at first use.
    const LoadedModel& lm =
        select_model(t.model, t.type_k == kv::CacheType::Q2_0 || t.type_v == kv::CacheType::Q2_0, keep_others);
    ThreadPool& pool = select_pool(t.n_threads, keep_others);
    ResultRow r;
    r.build_commit = OSCAR_BUILD_COMMIT;
    r.cpu_info = cpu_info_;
    r.model_filename = t.model;
    r.model_type = lm.stats.type;
    r.model_size = lm.stats.size;
    r.model_n_params = lm.stats.n_params;
    r.test = t;
    r.test_time = utc_now();
    r.rss_load_bytes = lm.rss_load;
    return std::make_unique<TestRun>(p_, log_, lm, pool, t, std::move(r));
  }

 private:
  const LoadedModel& select_model(const std::string& path, bool q2, bool keep_others) {
    const auto key = std::make_pair(path, q2);
    auto it = models_.find(key);
    if (it != models_.end()) return it->second;
    if (!keep_others) {
      models_.clear();
      pools_.clear();  // a pool belongs to one engine's run
    }
    tools::RunSettings s;
    s.model = path;
    s.n_threads = 1;  // the engine's own pool is unused: tests bring theirs
    s.use_mmap = p_.kv.use_mmap;
    LoadedModel lm;
    lm.engine = tools::Engine::load(s, log_);
    lm.stats = model_stats(lm.engine->model());
    lm.rss_load = rss_bytes();
    log_.info("model " + path + ": " + lm.stats.type + ", " + std::to_string(lm.stats.size >> 20) +
              " MiB mapped, RSS after load " + std::to_string(lm.rss_load >> 20) + " MiB");
    return models_.emplace(key, std::move(lm)).first->second;
  }

  ThreadPool& select_pool(int n, bool keep_others) {
    auto it = pools_.find(n);
    if (it != pools_.end()) return *it->second;
    if (!keep_others) pools_.clear();
    return *pools_.emplace(n, std::make_unique<ThreadPool>(n)).first->second;
  }

  const BenchParams& p_;
  const Logger& log_;
  std::string cpu_info_;
  std::map<std::pair<std::string, bool>, LoadedModel> models_;
  std::map<int, std::unique_ptr<ThreadPool>> pools_;
};

int run(int argc, char** argv) {
  const BenchParams p = parse_bench_params(argc, argv);
  if (p.help) {
    std::fputs(bench_usage().c_str(), stdout);
    return 0;
  }
  const Logger log(p.verbose ? LogLevel::Info : LogLevel::Warn);
  const std::vector<TestCase> tests = expand_tests(p);
  auto printer = make_printer(p.output, stdout);
  Runner runner(p, log);
  std::vector<ResultRow> rows;  // --interleave: all rows, printed together at the end
  printer->begin();
  if (!p.interleave) {
    for (size_t i = 0; i < tests.size(); ++i) {
      log.info("test " + std::to_string(i + 1) + "/" + std::to_string(tests.size()));
      const std::unique_ptr<TestRun> run = runner.start(tests[i], false);
      for (int rep = 0; rep < p.repetitions; ++rep) run->repeat();
      printer->row(run->finish());
    }
  } else {
    // Every test set up first, then round r runs repetition r of each in
    // turn: the machine's drift over the run then falls on all tests alike,
    // and the per-round ratios compare like with like.
    std::vector<std::unique_ptr<TestRun>> runs;
    for (size_t i = 0; i < tests.size(); ++i) {
      log.info("setting up test " + std::to_string(i + 1) + "/" + std::to_string(tests.size()));
      runs.push_back(runner.start(tests[i], true));
    }
    for (int rep = 0; rep < p.repetitions; ++rep)
      for (auto& run : runs) run->repeat();
    for (auto& run : runs) rows.push_back(run->finish());
    set_ratios_to_first(rows);
    for (const ResultRow& r : rows) printer->row(r);
  }
  printer->end();
  if (p.interleave && p.output == OutputFormat::Markdown) std::fputs(ratio_table(rows).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return oscar::tools::tool_main("oscar-bench", argc, argv, run); }
