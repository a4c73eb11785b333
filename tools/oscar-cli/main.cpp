// oscar-cli: run a prompt through a model in the terminal, llama-cli style.
//
//   oscar-cli -m model.gguf -p "Once upon a time" -n 64 --temp 0
//
// Streams the generated text to stdout; timings go to stderr. With
// --dump-logits FILE it writes every evaluated position's logits:
//   int32 n_positions, int32 n_vocab, int32 ids[n_positions],
//   float32 logits[n_positions][n_vocab]   (little-endian)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/log.h"
#include "conversation.h"
#include "engine.h"
#ifdef OSCAR_CLI_DOWNLOAD
#include "download.h"
#include "info_actions.h"
#endif
#include "grammar/grammar_flags.h"
#include "grammar/vocab_bytes.h"
#include "run_settings.h"
#include "runtime/forward.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"
#include "../common/tool_main.h"

using namespace oscar;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class LogitsDump {
 public:
  explicit LogitsDump(const std::string& path) : path_(path) {}
  bool enabled() const { return !path_.empty(); }
  void add(int32_t id, const float* logits, int n_vocab) {
    n_vocab_ = n_vocab;
    ids_.push_back(id);
    logits_.insert(logits_.end(), logits, logits + n_vocab);
  }
  void write() const {
    if (!enabled()) return;
    std::ofstream f(path_, std::ios::binary);
    if (!f) throw Error("--dump-logits: cannot write '" + path_ + "'");
    const int32_t n = (int32_t)ids_.size(), v = n_vocab_;
    f.write(reinterpret_cast<const char*>(&n), 4);
    f.write(reinterpret_cast<const char*>(&v), 4);
    f.write(reinterpret_cast<const char*>(ids_.data()), (std::streamsize)ids_.size() * 4);
    f.write(reinterpret_cast<const char*>(logits_.data()), (std::streamsize)logits_.size() * 4);
    if (!f) throw Error("--dump-logits: write to '" + path_ + "' failed");
  }

 private:
  std::string path_;
  int32_t n_vocab_ = 0;
  std::vector<int32_t> ids_;
  std::vector<float> logits_;
};

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help" || std::string(argv[i]) == "--usage") {
      std::printf("usage: oscar-cli [-m MODEL | -hf USER/REPO[:QUANT] | -mu URL] [-p PROMPT | -f FILE] [options]\n%s",
                  tools::common_usage().c_str());
      return 0;
    }
  tools::RunSettings s = tools::parse_run_settings(argc, argv);
#ifdef OSCAR_CLI_DOWNLOAD
  if (!s.action.empty()) return tools::run_info_action(s.action, "oscar-cli", tools::common_usage());
#else
  if (!s.action.empty()) throw Error("--" + s.action + " is not available in this build (no cpp-httplib)");
#endif
  const Logger log(s.verbose ? LogLevel::Debug : LogLevel::Info);
#ifdef OSCAR_CLI_DOWNLOAD
  tools::resolve_model_source(s, log);  // -hf / -mu: from the download cache
#else
  if (!s.hf_repo.empty() || !s.model_url.empty()) throw Error("-hf / -mu need a build with cpp-httplib");
#endif
  if (s.model.empty()) s.model = tools::default_model();
  if (s.model.empty()) throw Error("missing -m MODEL (see --help)");
  auto t_load = Clock::now();
  auto engine = tools::Engine::load(s, log);
  const model::Model& model = engine->model();
  const tok::Tokenizer& tokenizer = engine->tokenizer();
  log.info("load: " + std::to_string((int)ms_since(t_load)) + " ms");

  const int n_ctx = engine->context_size(s);
  auto cache = engine->make_cache(s, 1, n_ctx);
  runtime::Forward fwd(model, *cache, engine->pool(), engine->forward_options(s));
  LogitsDump dump(s.dump_logits);
  const int n_vocab = model.config().n_vocab;

  // Conversation mode: asked for, or the default when the model has a chat
  // template and no prompt was given.
  const bool has_template =
      !tokenizer.vocab().chat_template().empty() || !s.chat_template_file.empty() || !s.chat_template.empty();
  if (s.conversation || (!s.no_cnv && has_template && s.prompt.empty() && s.prompt_file.empty()))
  {
    require(s.grammar.empty() && s.json_schema.empty(),
            "--grammar / --json-schema constrain one completion (-p or -f); add -no-cnv to use them");
    return tools::run_conversation(s, *engine, *cache, fwd, stdin, stdout);
  }
  s.sampling.grammar = grammar::grammar_from_flags(s.grammar, s.json_schema);
  sampling::Sampler sampler(s.sampling, s.sampling.grammar ? grammar::make_token_trie(tokenizer) : nullptr);

  std::vector<tok::TokenId> prompt = tokenizer.tokenize(s.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (prompt.empty()) {
    require(tokenizer.vocab().bos() != tok::kNoToken, "empty prompt and the model has no BOS token");
    prompt.push_back(tokenizer.vocab().bos());
  }
  require((int)prompt.size() < n_ctx, "prompt is " + std::to_string(prompt.size()) +
                                          " tokens, more than the context of " + std::to_string(n_ctx));
  if (s.verbose_prompt) {
    std::fprintf(stderr, "prompt: %zu tokens\n", prompt.size());
    for (tok::TokenId t : prompt) std::fprintf(stderr, "%6d -> '%s'\n", t, tokenizer.display_piece(t).c_str());
  }
  std::fputs(s.prompt.c_str(), stdout);
  std::fflush(stdout);

  // Prompt, in physical batches; logits of every position only when dumping.
  const auto t_prompt = Clock::now();
  std::vector<float> last(n_vocab);
  for (size_t b = 0; b < prompt.size(); b += (size_t)s.n_ubatch) {
    const size_t e = std::min(prompt.size(), b + (size_t)s.n_ubatch);
    std::vector<runtime::BatchToken> batch;
    for (size_t i = b; i < e; ++i) batch.push_back({prompt[i], 0, (int32_t)i, dump.enabled() || i + 1 == prompt.size()});
    const auto& logits = fwd.eval(batch);
    size_t row = 0;
    for (size_t i = b; i < e; ++i) {
      if (!batch[i - b].logits) continue;
      if (dump.enabled()) dump.add(prompt[i], &logits[row * n_vocab], n_vocab);
      if (i + 1 == prompt.size()) std::copy(&logits[row * n_vocab], &logits[(row + 1) * n_vocab], last.begin());
      ++row;
    }
  }
  const double prompt_ms = ms_since(t_prompt);
  for (tok::TokenId t : prompt) sampler.accept(t);

  // Generation.
  const auto t_gen = Clock::now();
  tok::StreamDetokenizer detok(tokenizer);
  int n_gen = 0;
  int pos = (int)prompt.size();
  const int limit = s.n_predict < 0 ? n_ctx - pos : std::min(s.n_predict, n_ctx - pos);
  while (n_gen < limit) {
    const tok::TokenId t = sampler.sample(last.data(), n_vocab);
    sampler.accept(t);
    ++n_gen;
    if (!s.ignore_eos && tokenizer.vocab().is_eog(t)) break;  // --ignore-eos keeps going
    std::fputs(detok.push(t).c_str(), stdout);
    std::fflush(stdout);
    if (n_gen >= limit) break;
    const auto& logits = fwd.eval({{t, 0, pos++, true}});
    if (dump.enabled()) dump.add(t, logits.data(), n_vocab);
    std::copy(logits.begin(), logits.begin() + n_vocab, last.begin());
  }
  std::fputs(detok.finish().c_str(), stdout);
  std::fputs("\n", stdout);
  const double gen_ms = ms_since(t_gen);
  dump.write();
  std::fprintf(stderr, "\nprompt: %zu tokens in %.1f ms (%.2f tokens/s)\n", prompt.size(), prompt_ms,
               prompt.size() * 1000.0 / std::max(prompt_ms, 1e-3));
  std::fprintf(stderr, "generation: %d tokens in %.1f ms (%.2f tokens/s)\n", n_gen, gen_ms,
               n_gen * 1000.0 / std::max(gen_ms, 1e-3));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return oscar::tools::tool_main("oscar-cli", argc, argv, run); }
