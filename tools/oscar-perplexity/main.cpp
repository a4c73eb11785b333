// oscar-perplexity: perplexity of a model on a text, and the KL divergence of
// one setting (e.g. a KV cache type) against a saved reference run, with
// llama-perplexity's semantics:
//
//   oscar-perplexity -m model.gguf -f text.txt -c 512
//   oscar-perplexity -m model.gguf -f text.txt -ctk f16 -ctv f16 --kl-divergence-base base.kld
//   oscar-perplexity -m model.gguf -ctk q4_0 -ctv q4_0 --kl-divergence-base base.kld --kl-divergence
//
// The text is tokenized once (BOS added when the vocabulary asks for it) and
// cut into non-overlapping chunks of n_ctx tokens. Each chunk is evaluated
// from an empty cache with its first token replaced by BOS (when the
// vocabulary adds BOS), and only positions [n_ctx/2, n_ctx-1) are scored: the
// NLL of the next token, each with at least n_ctx/2 tokens of context.
// Several chunks go through one batch as separate sequences (n_batch/n_ctx of
// them), and only scored positions ask for logits.
//
// Scoring mode. In this engine the tokens of one batch attend to each other
// at full precision and to earlier batches as stored (docs/OSCAR.md §3), so
// a chunk evaluated in one batch would never read its own quantized K/V and
// every KV type would score the same. --ppl-mode decode (the default) batches
// only the unscored first half; the scored half then advances one position
// per step, every chunk of the pass in the same step as its own sequence, so
// each scored token reads all earlier tokens from the cache exactly as decode
// does. --ppl-mode batch is llama-perplexity's whole-chunk batching.
//
// --kv-report adds a per-layer table of attention-score and attention-output
// SNR (dB) of the KV setting against an exact f16 (or f32) reference,
// teacher-forced per layer, measured on a sample of the scored positions;
// the precise definition is in kv_report.h.
//
// Results go to stdout, progress and timings to stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "engine.h"
#include "kld_base.h"
#include "kv_report.h"
#include "ppl_stats.h"
#include "run_settings.h"
#include "runtime/forward.h"
#include "runtime/rotation_plan.h"
#include "tokenizer/tokenizer.h"
#include "../common/tool_main.h"

using namespace oscar;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Flags of this tool on top of the common ones.
struct PplFlags : tools::ExtraFlags {
  std::string kld_base;
  bool kld = false;
  int chunks = -1;  // -1: all
  ppl::LogprobType kld_type = ppl::LogprobType::F16;
  bool decode = true;       // --ppl-mode decode (default) or batch
  bool mode_given = false;
  bool kv_report = false;
  std::string kv_report_json;
  int kv_report_queries = 128;  // per chunk; 0: every scored position
  bool kv_report_queries_given = false;
  ppl::KvRefType kv_report_ref = ppl::KvRefType::F16;
  bool kv_report_ref_given = false;

  bool handle(const std::string& f, const std::function<std::string()>& next) override {
    if (f == "--kl-divergence-base") kld_base = next();
    else if (f == "--kl-divergence") kld = true;
    else if (f == "--kl-divergence-type") kld_type = ppl::parse_logprob_type(next());
    else if (f == "--ppl-mode") {
      const std::string v = next();
      if (v != "decode" && v != "batch") throw Error("--ppl-mode: expected decode or batch, got '" + v + "'");
      decode = v == "decode";
      mode_given = true;
    }
    else if (f == "--kv-report") kv_report = true;
    else if (f == "--kv-report-json") {
      kv_report_json = next();
      if (kv_report_json.empty()) throw Error("--kv-report-json: expected a file name");
    } else if (f == "--kv-report-ref") {
      kv_report_ref = ppl::parse_kv_ref_type(next());
      kv_report_ref_given = true;
    } else if (f == "--kv-report-queries") {
      const std::string v = next();
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || x < 0 || x > (1L << 30))
        throw Error("--kv-report-queries: expected a count >= 0 (0: every scored position), got '" + v + "'");
      kv_report_queries = (int)x;
      kv_report_queries_given = true;
    }
    else if (f == "--chunks") {
      const std::string v = next();
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || x < -1 || x == 0 || x > (1L << 30))
        throw Error("--chunks: expected a positive count or -1 (all), got '" + v + "'");
      chunks = (int)x;
    } else return false;
    return true;
  }
};

void usage() {
  std::printf("usage: oscar-perplexity -m MODEL -f TEXT [-c N] [-b N] [-ub N] [-t N] [-ctk T -ctv T] [--chunks N]\n"
              "       oscar-perplexity ... --kl-divergence-base FILE             (save the reference)\n"
              "       oscar-perplexity -m MODEL [-ctk T ...] --kl-divergence-base FILE --kl-divergence\n%s"
              "  --chunks N                 evaluate at most N chunks (-1: all)\n"
              "  --kl-divergence-base FILE  without --kl-divergence: write the reference log-probs;\n"
              "                             with it: read them (tokens come from FILE; -f optional)\n"
              "  --kl-divergence            compare this run against FILE: KLD, top-1 agreement, PPL\n"
              "  --kl-divergence-type T     f16 (default, half the size) or f32 log-probs in FILE\n"
              "  --ppl-mode decode|batch    decode (default): the scored half of a chunk goes one\n"
              "                             position per step, reading every earlier token from the\n"
              "                             KV cache as stored (what generation sees; judges KV types).\n"
              "                             batch: whole chunks in -ub batches, as llama-perplexity;\n"
              "                             tokens of one batch see each other at full precision, so\n"
              "                             the KV type only matters across batch boundaries\n"
              "  --kv-report                per-layer KV quality: SNR (dB) of the attention scores and of\n"
              "                             the attention outputs under this KV setting (-ctk/-ctv,\n"
              "                             --kv-hp-*, --kv-clip-*, --kv-group-size, rotations) against\n"
              "                             an exact reference. Teacher-forced: layer L's reference\n"
              "                             uses the Q/K/V this run produced at layer L, so errors do\n"
              "                             not compound. Per layer, over measured queries t, heads h,\n"
              "                             visible keys p (causal, sliding windows respected):\n"
              "                               s_ref = scale q.k_ref    s_kv = scale q'.k_cache\n"
              "                               score SNR = 10 log10(sum s_ref^2 / sum (s_kv - s_ref)^2)\n"
              "                             (not mean-centred); k_cache: the row the kernels read\n"
              "                             (tier and codec at that moment, rotated; the query's own\n"
              "                             batch at full precision), q' the rotated query.\n"
              "                               output SNR = 10 log10(sum |o_ref|^2 / sum |o_kv - o_ref|^2)\n"
              "                             o_ref = softmax(s_ref) V_ref per head, o_kv = the engine's\n"
              "                             output (V rotation undone, before the output projection).\n"
              "                             inf: no error at all\n"
              "  --kv-report-queries N      measure N evenly spaced scored positions per chunk\n"
              "                             (default 128; 0: all). Memory: K/V of every position\n"
              "                             and layer, 16 bytes per value (8 with --kv-report-ref f32)\n"
              "  --kv-report-ref f16|f32    reference K/V: f16 (default: what an f16 cache holds; the\n"
              "                             query's own batch stays f32, as in the engine) or f32\n"
              "  --kv-report-json FILE      also write the report (with raw sums, per-head SNR) as JSON\n"
              "Defaults: -c 512 (llama-perplexity's); -c 0 takes the model's context; -b 2048.\n",
              tools::common_usage().c_str());
}

// Whether argv sets the context size itself (the common parser's default is
// for generation; perplexity's is llama-perplexity's 512, or the base's).
bool ctx_given(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "-c" || f == "--ctx-size") return true;
  }
  return false;
}

// The forward pass for the settings. Uses Engine::forward_options (rotation
// plan, fused/reference attention) where the engine provides it, so the run is
// judged with exactly the options oscar-cli would use; the default options
// otherwise. `observer` (may be null: --kv-report's) watches every layer.
// Guaranteed copy elision returns the non-movable Forward.
template <class E>
runtime::Forward make_forward(E& e, const tools::RunSettings& s, kv::KvCache& cache,
                              runtime::LayerObserver* observer) {
  runtime::ForwardOptions o;
  if constexpr (requires { e.forward_options(s); }) o = e.forward_options(s);
  o.observer = observer;
  return runtime::Forward(e.model(), cache, e.pool(), o);
}

// Scored rows of one forward call: which chunk and position each belongs to.
struct Row {
  int chunk;
  int pos;
};

// What a round of chunks reports per chunk.
struct ChunkTotals {
  double nll = 0, nll_base = 0, kld = 0;
  int64_t n = 0, same = 0;
};

class Runner {
 public:
  Runner(tools::Engine& e, const tools::RunSettings& s, const PplFlags& flags, int n_ctx, int first, int n_chunks,
         std::vector<int32_t> tokens, bool add_bos)
      : e_(e), s_(s), flags_(flags), n_ctx_(n_ctx), first_(first), n_chunks_(n_chunks), tokens_(std::move(tokens)),
        add_bos_(add_bos), n_vocab_(e.model().config().n_vocab), totals_((size_t)n_chunks) {
    // Rows processed together: enough for every thread, bounded to ~64 MiB
    // of log-prob scratch for large vocabularies.
    group_ = std::max(e.pool().size(), (int)std::min<int64_t>(256, (8ll << 20) / std::max(1, n_vocab_)));
    cur_.resize((size_t)group_ * n_vocab_);
    if (flags_.kld) base_.resize((size_t)group_ * n_vocab_);
  }

  void set_writer(ppl::KldBaseWriter* w) { writer_ = w; }
  void set_reader(ppl::KldBaseReader* r) { reader_ = r; }
  void set_observer(runtime::LayerObserver* o) { observer_ = o; }

  void run() {
    const int n_seq = std::clamp(s_.n_batch / n_ctx_, 1, n_chunks_);
    auto cache = e_.make_cache(s_, n_seq, n_ctx_);
    runtime::Forward fwd = make_forward(e_, s_, *cache, observer_);
    std::fprintf(stderr, "perplexity: %d chunks of %d tokens (scoring positions %d..%d), %s mode, n_seq %d, n_ubatch %d\n",
                 n_chunks_, n_ctx_, first_, n_ctx_ - 2, flags_.decode ? "decode" : "batch", n_seq, s_.n_ubatch);
    if (flags_.kld)
      std::printf("chunk      PPL(Q)   ln(PPL(Q)/PPL(base))     mean KLD    same top\n");
    const auto t0 = Clock::now();
    int printed = 0;
    for (int c0 = 0; c0 < n_chunks_; c0 += n_seq) {
      const int ns = std::min(n_seq, n_chunks_ - c0);
      for (int q = 0; q < ns; ++q) cache->clear(q);
      auto token = [&](int q, int j) -> runtime::BatchToken {
        int32_t t = tokens_[(size_t)(c0 + q) * n_ctx_ + j];
        if (j == 0 && add_bos_) t = e_.tokenizer().vocab().bos();
        return {t, q, j, j >= first_};
      };
      // The last position is never evaluated: nothing scored depends on it.
      // batch: every chunk's positions [0, n_ctx-1), one sequence each, cut
      // into physical batches. decode: the same for the context [0, first)
      // only; the scored positions then go one step at a time, one token of
      // every chunk per step, so each reads all earlier tokens as stored.
      const int n_batched = flags_.decode ? first_ : n_ctx_ - 1;
      std::vector<runtime::BatchToken> all;
      all.reserve((size_t)ns * n_batched);
      for (int q = 0; q < ns; ++q)
        for (int j = 0; j < n_batched; ++j) all.push_back(token(q, j));
      for (size_t b = 0; b < all.size(); b += (size_t)s_.n_ubatch) {
        const size_t end = std::min(all.size(), b + (size_t)s_.n_ubatch);
        eval(fwd, std::vector<runtime::BatchToken>(all.begin() + (long)b, all.begin() + (long)end), c0);
      }
      for (int j = n_batched; j < n_ctx_ - 1; ++j) {
        std::vector<runtime::BatchToken> step;
        for (int q = 0; q < ns; ++q) step.push_back(token(q, j));
        eval(fwd, step, c0);
      }
      if (c0 == 0)
        std::fprintf(stderr, "perplexity: %.2f seconds per pass of %d chunk(s) - ETA %.1f s\n", seconds_since(t0), ns,
                     seconds_since(t0) * std::ceil((double)n_chunks_ / ns));
      for (; printed < c0 + ns; ++printed) print_chunk(printed);
    }
    if (!flags_.kld) std::printf("\n");
    const double secs = seconds_since(t0);
    std::fprintf(stderr, "perplexity: %lld tokens evaluated in %.2f s (%.1f tokens/s)\n",
                 (long long)n_chunks_ * (n_ctx_ - 1), secs, (double)n_chunks_ * (n_ctx_ - 1) / std::max(secs, 1e-9));
  }

  const ppl::PplAccumulator& accumulator() const { return acc_; }
  const ppl::KldSummary& summary() const { return kld_; }

 private:
  int32_t next_token(const Row& r) const { return tokens_[(size_t)r.chunk * n_ctx_ + r.pos + 1]; }
  // Where the row's record lives in the base file.
  uint64_t record(const Row& r) const { return (uint64_t)r.chunk * (n_ctx_ - 1 - first_) + (uint64_t)(r.pos - first_); }

  void eval(runtime::Forward& fwd, const std::vector<runtime::BatchToken>& batch, int c0) {
    std::vector<Row> rows;
    for (const auto& bt : batch)
      if (bt.logits) rows.push_back({c0 + bt.seq, bt.pos});
    const std::vector<float>& logits = fwd.eval(batch);
    process(rows, logits);
  }

  // Scores rows (in batch order) in groups, the per-row vocabulary work
  // spread over the pool.
  void process(const std::vector<Row>& rows, const std::vector<float>& logits) {
    for (size_t g0 = 0; g0 < rows.size(); g0 += (size_t)group_) {
      const size_t gn = std::min(rows.size() - g0, (size_t)group_);
      std::vector<float> nll_base(gn, 0.0f);
      if (reader_)
        for (size_t i = 0; i < gn; ++i)
          reader_->get(record(rows[g0 + i]), nll_base[i], std::span<float>(&base_[i * n_vocab_], (size_t)n_vocab_));
      std::vector<double> nll(gn);
      std::vector<ppl::KldPoint> points(gn);
      e_.pool().parallel_for(gn, 1, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          const std::span<const float> in(&logits[(g0 + i) * n_vocab_], (size_t)n_vocab_);
          const std::span<float> lp(&cur_[i * n_vocab_], (size_t)n_vocab_);
          ppl::log_softmax(in, lp);
          nll[i] = -(double)lp[(size_t)next_token(rows[g0 + i])];
          if (reader_) {
            // Seen through the base's storage type, like the base itself.
            ppl::round_trip(reader_->header().type, lp);
            points[i] = ppl::compare(std::span<const float>(&base_[i * n_vocab_], (size_t)n_vocab_), lp);
          }
        }
      });
      for (size_t i = 0; i < gn; ++i) {
        ChunkTotals& t = totals_[(size_t)rows[g0 + i].chunk];
        acc_.add(nll[i]);
        t.nll += nll[i];
        ++t.n;
        if (writer_)
          writer_->put(record(rows[g0 + i]), (float)nll[i], std::span<const float>(&cur_[i * n_vocab_], (size_t)n_vocab_));
        if (reader_) {
          kld_.add(nll_base[i], nll[i], points[i]);
          t.nll_base += nll_base[i];
          t.kld += points[i].kld;
          t.same += points[i].same_top ? 1 : 0;
        }
      }
    }
  }

  // Running values over chunks 0..c, as llama-perplexity prints them.
  void print_chunk(int c) {
    run_.nll += totals_[(size_t)c].nll;
    run_.nll_base += totals_[(size_t)c].nll_base;
    run_.kld += totals_[(size_t)c].kld;
    run_.n += totals_[(size_t)c].n;
    run_.same += totals_[(size_t)c].same;
    const double n = (double)std::max<int64_t>(1, run_.n);
    if (flags_.kld)
      std::printf("%5d %11.4f %22.6f %12.8f %9.3f%%\n", c + 1, std::exp(run_.nll / n), (run_.nll - run_.nll_base) / n,
                  run_.kld / n, 100.0 * (double)run_.same / n);
    else
      std::printf("[%d]%.4f,", c + 1, std::exp(run_.nll / n));
    std::fflush(stdout);
  }

  tools::Engine& e_;
  const tools::RunSettings& s_;
  const PplFlags& flags_;
  const int n_ctx_, first_, n_chunks_;
  const std::vector<int32_t> tokens_;
  const bool add_bos_;
  const int n_vocab_;
  int group_ = 1;
  std::vector<float> cur_, base_;
  std::vector<ChunkTotals> totals_;
  ChunkTotals run_;
  ppl::PplAccumulator acc_;
  ppl::KldSummary kld_;
  ppl::KldBaseWriter* writer_ = nullptr;
  ppl::KldBaseReader* reader_ = nullptr;
  runtime::LayerObserver* observer_ = nullptr;
};

// Which positions --kv-report measures: `count` evenly spaced scored
// positions (the middles of `count` equal slices of [first, n_ctx - 1)),
// or all of them when count is 0 or at least their number.
std::vector<bool> report_positions(int n_ctx, int first, int count) {
  std::vector<bool> m((size_t)n_ctx, false);
  const int n_scored = n_ctx - 1 - first;
  if (count <= 0 || count >= n_scored) {
    for (int p = first; p < n_ctx - 1; ++p) m[(size_t)p] = true;
  } else {
    for (int i = 0; i < count; ++i) m[(size_t)(first + (int)(((2ll * i + 1) * n_scored) / (2ll * count)))] = true;
  }
  return m;
}

// One line naming the KV setting the report judges.
std::string kv_setting(tools::Engine& e, const tools::RunSettings& s, int n_ctx, int n_chunks, int per_chunk) {
  const kv::KvCacheConfig c = tools::kv_config(s, 1, n_ctx);
  const runtime::ForwardOptions o = e.forward_options(s);
  char b[512];
  std::string q2;
  const bool q2k = c.type_k == kv::CacheType::Q2_0, q2v = c.type_v == kv::CacheType::Q2_0;
  if (q2k || q2v) {
    std::snprintf(b, sizeof b, ", q2_0 clip K %.2f V %.2f, group %s", (double)c.q2_k.clip_ratio,
                  (double)c.q2_v.clip_ratio, s.kv_group_size > 0 ? std::to_string(s.kv_group_size).c_str() : "head dim");
    q2 = b;
  }
  std::snprintf(b, sizeof b, "-ctk %s -ctv %s, sink %d, recent %d%s, rotations %s, %s attention, -c %d, %d chunk(s), %d queries per chunk",
                kv::cache_type_name(c.type_k), kv::cache_type_name(c.type_v), c.hp_sink, c.hp_recent, q2.c_str(),
                runtime::rotation_mode_name(o.rotations ? o.rotations->mode : runtime::RotationMode::None),
                o.fused_attention ? "fused" : "reference", n_ctx, n_chunks, per_chunk);
  return b;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      usage();
      return 0;
    }
  PplFlags flags;
  const tools::RunSettings s = tools::parse_run_settings(argc, argv, &flags);
  if (s.model.empty()) throw Error("missing -m MODEL (see --help)");
  if (flags.kld && flags.kld_base.empty()) throw Error("--kl-divergence needs --kl-divergence-base FILE");
  if (!flags.kv_report) {
    if (!flags.kv_report_json.empty()) throw Error("--kv-report-json needs --kv-report");
    if (flags.kv_report_queries_given) throw Error("--kv-report-queries needs --kv-report");
    if (flags.kv_report_ref_given) throw Error("--kv-report-ref needs --kv-report");
  }
  // Fail before the run when the report cannot be written.
  if (!flags.kv_report_json.empty()) {
    FILE* f = std::fopen(flags.kv_report_json.c_str(), "w");
    if (!f) throw Error("--kv-report-json: cannot write '" + flags.kv_report_json + "'");
    std::fclose(f);
  }
  const bool have_text = !s.prompt_file.empty() || !s.prompt.empty();
  if (!flags.kld && s.prompt_file.empty() && s.prompt.empty()) throw Error("missing -f TEXT (see --help)");
  if (!s.prompt_file.empty() && s.prompt.empty()) throw Error("the text in '" + s.prompt_file + "' is empty");

  // Open the base before the model loads, so a bad file fails at once.
  std::unique_ptr<ppl::KldBaseReader> reader;
  if (flags.kld) reader = std::make_unique<ppl::KldBaseReader>(flags.kld_base);

  const Logger log(s.verbose ? LogLevel::Debug : LogLevel::Warn);
  auto engine = tools::Engine::load(s, log);
  const model::Model& model = engine->model();
  const tok::Vocab& vocab = engine->tokenizer().vocab();
  const int n_vocab = model.config().n_vocab;
  const bool add_bos = vocab.add_bos() && vocab.bos() != tok::kNoToken;
  std::vector<std::string> texts(vocab.n_tokens());
  for (size_t i = 0; i < texts.size(); ++i) texts[i] = vocab.text((tok::TokenId)i);
  const uint64_t vhash = ppl::vocab_hash(texts);

  int n_ctx = ctx_given(argc, argv) ? engine->context_size(s) : 512;
  std::vector<int32_t> tokens;
  if (have_text) {
    const auto t0 = Clock::now();
    tokens = engine->tokenizer().tokenize(s.prompt, /*add_special=*/true, /*parse_special=*/false);
    std::fprintf(stderr, "perplexity: tokenized %zu bytes into %zu tokens in %.2f s\n", s.prompt.size(), tokens.size(),
                 seconds_since(t0));
  }

  int n_chunks = 0, first = 0;
  if (reader) {
    const ppl::KldHeader& h = reader->header();
    const std::string base = "--kl-divergence-base '" + flags.kld_base + "': ";
    if ((int)h.n_vocab != n_vocab)
      throw Error(base + "made with a vocabulary of " + std::to_string(h.n_vocab) + " tokens, the model has " +
                  std::to_string(n_vocab));
    if (h.vocab_hash != vhash) throw Error(base + "made with a different vocabulary (token texts differ)");
    if (h.bos_replaced != add_bos) throw Error(base + "made with a different BOS setting of the vocabulary");
    if (flags.mode_given && flags.decode != h.decode_mode)
      throw Error(base + "made with --ppl-mode " + (h.decode_mode ? "decode" : "batch") + ", this run asks for " +
                  (flags.decode ? "decode" : "batch"));
    flags.decode = h.decode_mode;
    if (ctx_given(argc, argv) && n_ctx != (int)h.n_ctx)
      throw Error(base + "made with -c " + std::to_string(h.n_ctx) + ", this run asks for -c " + std::to_string(n_ctx));
    n_ctx = (int)h.n_ctx;
    first = (int)h.first;
    n_chunks = (int)h.n_chunks;
    if (flags.chunks > 0) n_chunks = std::min(n_chunks, flags.chunks);
    if (have_text) {
      // The text is optional here; given, it must be the base's text.
      const std::vector<int32_t>& bt = reader->tokens();
      size_t i = 0;
      while (i < bt.size() && i < tokens.size() && bt[i] == tokens[i]) ++i;
      if (i < bt.size())
        throw Error(base + "the text does not tokenize to the base's tokens (first difference at token " +
                    std::to_string(i) + " of " + std::to_string(bt.size()) + ")");
    }
    tokens = reader->tokens();
    tokens.resize((size_t)n_chunks * n_ctx);
  } else {
    if (n_ctx < 4) throw Error("-c " + std::to_string(n_ctx) + ": perplexity needs a context of at least 4 tokens");
    if (tokens.empty()) throw Error("the text tokenizes to nothing");
    if ((int64_t)tokens.size() < 2ll * n_ctx)
      throw Error("the text is " + std::to_string(tokens.size()) + " tokens; perplexity with -c " +
                  std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) + " (two chunks)");
    first = n_ctx / 2;
    n_chunks = (int)(tokens.size() / (size_t)n_ctx);
    if (flags.chunks > 0) n_chunks = std::min(n_chunks, flags.chunks);
    tokens.resize((size_t)n_chunks * n_ctx);
  }
  if (n_ctx > model.config().n_ctx_train)
    std::fprintf(stderr, "perplexity: warning: -c %d exceeds the model's training context %d\n", n_ctx,
                 model.config().n_ctx_train);

  std::unique_ptr<ppl::KldBaseWriter> writer;
  if (!flags.kld && !flags.kld_base.empty()) {
    ppl::KldHeader h;
    h.n_vocab = (uint32_t)n_vocab;
    h.n_ctx = (uint32_t)n_ctx;
    h.first = (uint32_t)first;
    h.n_chunks = (uint32_t)n_chunks;
    h.type = flags.kld_type;
    h.bos_replaced = add_bos;
    h.decode_mode = flags.decode;
    h.vocab_hash = vhash;
    writer = std::make_unique<ppl::KldBaseWriter>(flags.kld_base, h, tokens);
  }

  Runner runner(*engine, s, flags, n_ctx, first, n_chunks, tokens, add_bos);
  runner.set_writer(writer.get());
  runner.set_reader(reader.get());
  std::unique_ptr<ppl::KvReport> report;
  std::string setting;
  if (flags.kv_report) {
    const std::vector<bool> measured = report_positions(n_ctx, first, flags.kv_report_queries);
    const int per_chunk = (int)std::count(measured.begin(), measured.end(), true);
    setting = kv_setting(*engine, s, n_ctx, n_chunks, per_chunk);
    if (!flags.decode && s.n_ubatch >= n_ctx - 1)
      std::fprintf(stderr, "perplexity: note: --ppl-mode batch with -ub >= -c: every scored token sees its whole "
                           "chunk in its own batch at full precision, so --kv-report measures no cache error\n");
    report = std::make_unique<ppl::KvReport>(
        model.config(), flags.kv_report_ref,
        [measured](int, int pos) { return pos >= 0 && pos < (int)measured.size() && measured[(size_t)pos]; },
        &engine->pool());
    runner.set_observer(report.get());
  }
  runner.run();
  if (writer) {
    writer->finish();
    std::fprintf(stderr, "perplexity: wrote the KLD base '%s' (%s log-probs)\n", flags.kld_base.c_str(),
                 ppl::logprob_type_name(flags.kld_type));
  }
  const ppl::PplAccumulator& acc = runner.accumulator();
  if (acc.count() > 1)
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", acc.ppl(), acc.ppl_error());
  else
    std::printf("Final estimate: PPL = %.4f\n", acc.ppl());
  if (flags.kld) std::printf("\n%s", ppl::format_report(runner.summary().report()).c_str());
  if (report) {
    std::printf("\n%s", report->table(setting).c_str());
    if (!flags.kv_report_json.empty()) {
      FILE* f = std::fopen(flags.kv_report_json.c_str(), "w");
      if (!f) throw Error("--kv-report-json: cannot write '" + flags.kv_report_json + "'");
      const std::string j = report->json(setting);
      const bool ok = std::fwrite(j.data(), 1, j.size(), f) == j.size();
      if (std::fclose(f) != 0 || !ok) throw Error("--kv-report-json: writing '" + flags.kv_report_json + "' failed");
      std::fprintf(stderr, "perplexity: wrote the KV report '%s'\n", flags.kv_report_json.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return oscar::tools::tool_main("oscar-perplexity", argc, argv, run); }
