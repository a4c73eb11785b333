#include "conversation.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_template.h"
#include "chat_setup.h"
#include "core/error.h"
#include "sampling/sampler.h"

namespace oscar::tools {

namespace {

std::string template_source(const RunSettings& s, const tok::Tokenizer& tokenizer) {
  require(!tokenizer.vocab().chat_template().empty() || !s.chat_template_file.empty() || !s.chat_template.empty(),
          "conversation mode: the model has no chat template (give --chat-template NAME or --chat-template-file, "
          "or -no-cnv)");
  std::vector<std::string> notes;
  const ChosenTemplate t = choose_chat_template(s, tokenizer.vocab().chat_template(), notes);
  for (const auto& n : notes) std::fprintf(stderr, "%s\n", n.c_str());
  return t.source;
}

bool read_line(std::FILE* in, std::string& line) {
  line.clear();
  int c;
  while ((c = std::fgetc(in)) != EOF && c != '\n') line += (char)c;
  return c != EOF || !line.empty();
}

}  // namespace

int run_conversation(const RunSettings& s, Engine& engine, kv::KvCache& cache, runtime::Forward& fwd,
                     std::FILE* in, std::FILE* out) {
  const tok::Tokenizer& tokenizer = engine.tokenizer();
  const tok::Vocab& vocab = tokenizer.vocab();
  const std::string source = template_source(s, tokenizer);
  const std::string bos = vocab.bos() != tok::kNoToken ? vocab.text(vocab.bos()) : "";
  const std::string eos = vocab.eos() != tok::kNoToken ? vocab.text(vocab.eos()) : "";
  const chat::ChatTemplate tmpl(source, bos, eos);
  chat::ChatOutputFormat fmt = chat::detect_output_format(source);
  if (s.reasoning_format == "none") fmt.reasoning.reset();
  fmt.tools.reset();  // no tools in the terminal

  const int n_vocab = engine.model().config().n_vocab;
  const int n_ctx = cache.capacity();
  sampling::Sampler sampler(s.sampling);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!s.system_prompt.empty()) messages.push_back({{"role", "system"}, {"content", s.system_prompt}});
  std::vector<tok::TokenId> cached;  // tokens whose K/V are in sequence 0

  std::string line;
  for (;;) {
    std::fputs("\n> ", out);
    std::fflush(out);
    if (!read_line(in, line)) break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    chat::ChatInputs inputs;
    inputs.messages = messages;
    inputs.add_generation_prompt = true;
    inputs.extra = default_template_kwargs(s);  // --chat-template-kwargs, --reasoning
    const std::string prompt = tmpl.apply(inputs);
    // The rendered text carries BOS itself when the template adds it.
    std::vector<tok::TokenId> toks = tokenizer.tokenize(prompt, /*add_special=*/false, /*parse_special=*/true);
    if ((int)toks.size() >= n_ctx) {
      std::fprintf(stderr, "\nconversation is %zu tokens, more than the context of %d: stopping\n", toks.size(), n_ctx);
      return 1;
    }
    // Keep the common prefix of what is cached; evaluate the rest.
    size_t keep = 0;
    while (keep < cached.size() && keep < toks.size() && cached[keep] == toks[keep]) ++keep;
    if (keep == toks.size()) --keep;  // the last prompt token must be evaluated for its logits
    keep = (size_t)cache.truncate(0, (int)keep);  // less when a sliding-window ring cannot go back that far
    std::fprintf(stderr, "conversation: %zu prompt tokens, %zu reused from the cache\n", toks.size(), keep);
    cached.resize(keep);
    std::vector<float> last((size_t)n_vocab);
    for (size_t b = keep; b < toks.size(); b += (size_t)s.n_ubatch) {
      const size_t e = std::min(toks.size(), b + (size_t)s.n_ubatch);
      std::vector<runtime::BatchToken> batch;
      for (size_t i = b; i < e; ++i) batch.push_back({toks[i], 0, (int32_t)i, i + 1 == toks.size()});
      const auto& logits = fwd.eval(batch);
      if (e == toks.size()) std::copy(logits.begin(), logits.begin() + n_vocab, last.begin());
    }
    cached = toks;
    for (tok::TokenId t : toks) sampler.accept(t);

    chat::ChatOutputParser parser(fmt, prompt);
    tok::StreamDetokenizer detok(tokenizer);
    std::string reasoning, content;
    bool in_thought = false;
    auto show = [&](const chat::ChatDelta& d) {
      if (!d.reasoning.empty()) {
        if (!in_thought) std::fputs("[thinking] ", out);
        in_thought = true;
        std::fputs(d.reasoning.c_str(), out);
        reasoning += d.reasoning;
      }
      if (!d.content.empty()) {
        if (in_thought) std::fputs("\n[answer] ", out);
        in_thought = false;
        std::fputs(d.content.c_str(), out);
        content += d.content;
      }
      std::fflush(out);
    };
    int pos = (int)toks.size();
    const int limit = s.n_predict < 0 ? n_ctx - pos : std::min(s.n_predict, n_ctx - pos);
    for (int n = 0; n < limit; ++n) {
      const tok::TokenId t = sampler.sample(last.data(), n_vocab);
      sampler.accept(t);
      if (vocab.is_eog(t)) break;
      show(parser.feed(detok.push(t)));
      if (pos + 1 >= n_ctx) break;
      const auto& logits = fwd.eval({{t, 0, pos++, true}});
      cached.push_back(t);
      std::copy(logits.begin(), logits.begin() + n_vocab, last.begin());
    }
    show(parser.feed(detok.finish()));
    show(parser.finish());
    nlohmann::ordered_json reply = {{"role", "assistant"}, {"content", content}};
    if (!reasoning.empty()) reply["reasoning_content"] = reasoning;
    messages.push_back(reply);
  }
  std::fputs("\n", out);
  return 0;
}

}  // namespace oscar::tools
