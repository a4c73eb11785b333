#include "server/response_shaper.h"

#include <cmath>

namespace oscar::server {

namespace {

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back((int)c);
  return b;
}

double finite_or(double x, double v) { return std::isfinite(x) ? x : v; }

// One token's probability entry as llama-server writes it: log-probs of
// the model's distribution, or (post_sampling_probs) probabilities after
// the sampling chain under "prob"/"top_probs".
Json prob_entry(const TokenProb& p, bool post) {
  Json j = {{"id", p.token}, {"token", p.piece}, {"bytes", bytes_of(p.piece)}};
  if (post) j["prob"] = std::isfinite(p.logprob) ? std::exp((double)p.logprob) : 0.0;
  else j["logprob"] = finite_or(p.logprob, -1e30);
  return j;
}

Json token_probs(const TokenOut& t, bool post) {
  Json top = Json::array();
  for (const auto& a : t.top) top.push_back(prob_entry(a, post));
  Json j = prob_entry(*t.prob, post);
  j[post ? "top_probs" : "top_logprobs"] = top;
  return j;
}

Json progress_json(const PromptProgress& p) {
  return {{"total", p.total}, {"cache", p.cache}, {"processed", p.processed}, {"time_ms", p.time_ms}};
}

const char* openai_finish(const Done& d) {
  // "cancelled" reaches a client only when the server cut the generation
  // (shutdown); a client that cancelled is gone. It must not read as "stop".
  if (d.reason == FinishReason::Cancelled) return "cancelled";
  return d.reason == FinishReason::Length ? "length" : "stop";
}

class ChatShaper : public ResponseShaper {
 public:
  ChatShaper(ShaperInfo info, const chat::ChatOutputFormat& fmt, const std::string& prompt)
      : info_(std::move(info)), parser_(fmt, prompt) {}

  std::vector<Json> chunks(const Event& e) override {
    std::vector<Json> out;
    if (e.progress) {
      // As llama-server: every progress chunk carries the role delta.
      Json c = chunk({{"role", "assistant"}, {"content", nullptr}}, nullptr);
      c["prompt_progress"] = progress_json(*e.progress);
      out.push_back(c);
      sent_role_ = true;
    }
    if (!sent_role_ && (!e.tokens.empty() || e.done)) {
      out.push_back(chunk({{"role", "assistant"}, {"content", nullptr}}, nullptr));
      sent_role_ = true;
    }
    Json lp = Json::array();
    for (const auto& t : e.tokens) {
      add(parser_.feed(t.text), out);
      if (t.prob) {
        lp.push_back(token_probs(t, info_.post_sampling_probs));
        logprobs_.push_back(lp.back());
      }
    }
    if (!lp.empty() && info_.logprobs) {
      // Logprobs travel with the chunk of their tokens; an empty content delta carries them when
      // the text is still held back.
      if (out.empty() || out.back()["choices"][0]["delta"].contains("role")) out.push_back(chunk(Json::object(), nullptr));
      out.back()["choices"][0]["logprobs"] = {{"content", lp}};
    }
    // Per-token timings ride on the token's chunk, never on the role chunk (as llama-server).
    if (e.timings && !e.done && !out.empty() && !out.back()["choices"][0]["delta"].contains("role"))
      out.back()["timings"] = timings_json(*e.timings);
    if (e.done) {
      done_ = *e.done;
      complete_ = true;
      add(parser_.feed(e.done->tail), out);
      add(parser_.finish(), out);
      Json last = chunk(Json::object(), finish_reason());
      last["timings"] = timings_json(done_.timings);
      out.push_back(last);
      if (info_.include_usage) {
        Json u = base("chat.completion.chunk");
        u["choices"] = Json::array();
        u["usage"] = usage_json(done_.timings);
        u["timings"] = timings_json(done_.timings);
        out.push_back(u);
      }
    }
    return out;
  }
  bool complete() const override { return complete_; }

  Json response() const override {
    Json msg = {{"role", "assistant"}, {"content", content_.empty() && !calls_.empty() ? Json(nullptr) : Json(content_)}};
    if (!reasoning_.empty()) msg["reasoning_content"] = reasoning_;
    if (!calls_.empty()) msg["tool_calls"] = calls_;
    Json choice = {{"index", info_.index}, {"message", msg}, {"finish_reason", finish_reason()},
                   {"logprobs", info_.logprobs ? Json({{"content", logprobs_}}) : Json(nullptr)}};
    Json r = base("chat.completion");
    r["choices"] = Json::array({choice});
    r["usage"] = usage_json(done_.timings);
    r["timings"] = timings_json(done_.timings);
    return r;
  }

 private:
  Json base(const char* object) const {
    return {{"id", info_.id}, {"object", object}, {"created", (long long)info_.created}, {"model", info_.model},
            {"system_fingerprint", info_.fingerprint}};
  }
  Json chunk(Json delta, Json finish) const {
    Json c = base("chat.completion.chunk");
    c["choices"] = Json::array({{{"index", info_.index}, {"delta", std::move(delta)}, {"logprobs", nullptr},
                                 {"finish_reason", std::move(finish)}}});
    return c;
  }
  Json finish_reason() const {
    if (!calls_.empty() && done_.reason != FinishReason::Length) return "tool_calls";
    return openai_finish(done_);
  }
  void add(const chat::ChatDelta& d, std::vector<Json>& out) {
    if (!d.reasoning.empty()) {
      reasoning_ += d.reasoning;
      out.push_back(chunk({{"reasoning_content", d.reasoning}}, nullptr));
    }
    if (!d.content.empty()) {
      content_ += d.content;
      out.push_back(chunk({{"content", d.content}}, nullptr));
    }
    for (const auto& c : d.tool_calls) {
      const int index = (int)calls_.size();
      // Ids stay unique across the choices of one request.
      std::string choice;
      if (info_.index > 0) choice = "-" + std::to_string(info_.index);
      Json call = {{"id", info_.id + choice + "-call-" + std::to_string(index)},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments.dump()}}}};
      calls_.push_back(call);
      Json streamed = call;
      streamed["index"] = index;
      out.push_back(chunk({{"tool_calls", Json::array({streamed})}}, nullptr));
    }
  }

  ShaperInfo info_;
  chat::ChatOutputParser parser_;
  bool sent_role_ = false;
  std::string content_, reasoning_;
  Json calls_ = Json::array();
  Json logprobs_ = Json::array();
  Done done_;
  bool complete_ = false;
};

class CompletionsShaper : public ResponseShaper {
 public:
  explicit CompletionsShaper(ShaperInfo info) : info_(std::move(info)) {}

  std::vector<Json> chunks(const Event& e) override {
    std::vector<Json> out;
    if (e.progress) {
      Json c = choice_chunk("", Json(nullptr), Json(nullptr));
      c["prompt_progress"] = progress_json(*e.progress);
      out.push_back(c);
    }
    std::string text;
    Json lp = {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
               {"text_offset", Json::array()}};
    for (const auto& t : e.tokens) {
      if (t.prob) {
        lp["tokens"].push_back(t.prob->piece);
        lp["token_logprobs"].push_back(finite_or(t.prob->logprob, -1e30));
        Json top = Json::object();
        for (const auto& a : t.top) top[a.piece] = finite_or(a.logprob, -1e30);
        lp["top_logprobs"].push_back(top);
        lp["text_offset"].push_back((long long)(text_.size() + text.size()));
        for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) all_lp_[k].push_back(lp[k].back());
      }
      text += t.text;
    }
    if (e.done) {
      done_ = *e.done;
      complete_ = true;
      text += e.done->tail;
    }
    text_ += text;
    if (!text.empty() || !lp["tokens"].empty() || e.done) {
      Json c = choice_chunk(text, info_.logprobs ? lp : Json(nullptr),
                            e.done ? Json(openai_finish(done_)) : Json(nullptr));
      if (e.done) c["timings"] = timings_json(done_.timings);
      else if (e.timings) c["timings"] = timings_json(*e.timings);
      out.push_back(c);
    }
    if (e.done && info_.include_usage) {
      Json u = base();
      u["choices"] = Json::array();
      u["usage"] = usage_json(done_.timings);
      u["timings"] = timings_json(done_.timings);
      out.push_back(u);
    }
    return out;
  }
  bool complete() const override { return complete_; }

  Json response() const override {
    Json r = base();
    r["choices"] = Json::array({{{"text", text_}, {"index", info_.index},
                                 {"logprobs", info_.logprobs ? all_lp_ : Json(nullptr)},
                                 {"finish_reason", openai_finish(done_)}}});
    r["usage"] = usage_json(done_.timings);
    r["timings"] = timings_json(done_.timings);
    return r;
  }

 private:
  Json base() const {
    return {{"id", info_.id}, {"object", "text_completion"}, {"created", (long long)info_.created},
            {"model", info_.model}, {"system_fingerprint", info_.fingerprint}};
  }
  Json choice_chunk(const std::string& text, Json logprobs, Json finish) const {
    Json c = base();
    c["choices"] = Json::array({{{"text", text}, {"index", info_.index}, {"logprobs", std::move(logprobs)},
                                 {"finish_reason", std::move(finish)}}});
    return c;
  }
  ShaperInfo info_;
  std::string text_;
  Json all_lp_ = {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
                  {"text_offset", Json::array()}};
  Done done_;
  bool complete_ = false;
};

class NativeShaper : public ResponseShaper {
 public:
  NativeShaper(ShaperInfo info, Json settings) : info_(std::move(info)), settings_(std::move(settings)) {}

  std::vector<Json> chunks(const Event& e) override {
    std::vector<Json> out;
    if (e.progress) {
      Json c = partial("", Json::array(), e.slot);
      c["prompt_progress"] = progress_json(*e.progress);
      out.push_back(c);
    }
    for (const auto& t : e.tokens) {
      tokens_.push_back(t.token);
      content_ += t.text;
      Json c = partial(t.text, Json::array({t.token}), e.slot);
      if (e.timings && &t == &e.tokens.back()) c["timings"] = timings_json(*e.timings);
      if (t.prob) {
        Json cp = token_probs(t, info_.post_sampling_probs);
        c["completion_probabilities"] = Json::array({cp});
        probs_.push_back(cp);
      }
      out.push_back(c);
    }
    if (e.done) {
      done_ = *e.done;
      complete_ = true;
      content_ += e.done->tail;
      Json f = final_object();
      f["content"] = e.done->tail;
      out.push_back(project(f));
    }
    return out;
  }
  bool complete() const override { return complete_; }

  Json response() const override {
    Json r = final_object();
    r["content"] = content_;
    if (info_.return_tokens) r["tokens"] = tokens_;
    if (!probs_.empty()) r["completion_probabilities"] = probs_;
    return project(r);
  }
  bool done_marker() const override { return false; }

 private:
  Json partial(const std::string& text, Json tokens, int slot) const {
    return {{"index", info_.index}, {"content", text}, {"tokens", std::move(tokens)}, {"stop", false},
            {"id_slot", slot}, {"tokens_predicted", (int)tokens_.size()}, {"tokens_evaluated", info_.n_prompt}};
  }
  Json project(const Json& full) const {
    return info_.response_fields.empty() ? full : project_fields(full, info_.response_fields);
  }
  Json final_object() const {
    const char* stop_type = done_.reason == FinishReason::Length ? "limit"
                            : !done_.stop_word.empty()          ? "word"
                            : done_.stopped_eos                 ? "eos"
                                                                : "none";
    return {{"index", info_.index},
            {"content", ""},
            {"tokens", Json::array()},
            {"id_slot", done_.slot},
            {"stop", true},
            {"model", info_.model},
            {"tokens_predicted", done_.timings.n_predicted},
            {"tokens_evaluated", done_.timings.n_prompt},
            {"generation_settings", settings_},
            {"prompt", info_.prompt_text},
            {"has_new_line", content_.find('\n') != std::string::npos},
            {"truncated", done_.truncated},
            {"stop_type", stop_type},
            {"stopping_word", done_.stop_word},
            {"tokens_cached", done_.timings.n_prompt + done_.timings.n_predicted},
            {"timings", timings_json(done_.timings)}};
  }
  ShaperInfo info_;
  Json settings_;
  std::string content_;
  Json tokens_ = Json::array();
  Json probs_ = Json::array();
  Done done_;
  bool complete_ = false;
};

}  // namespace

Json usage_json(const Timings& t) {
  return {{"completion_tokens", t.n_predicted},
          {"prompt_tokens", t.n_prompt},
          {"total_tokens", t.n_prompt + t.n_predicted},
          {"prompt_tokens_details", {{"cached_tokens", t.n_cached}}}};
}

Json timings_json(const Timings& t) {
  const int n_eval = t.n_prompt - t.n_cached;
  return {{"cache_n", t.n_cached},
          {"prompt_n", n_eval},
          {"prompt_ms", t.prompt_ms},
          {"prompt_per_token_ms", n_eval > 0 ? t.prompt_ms / n_eval : 0.0},
          {"prompt_per_second", t.prompt_ms > 0 ? n_eval * 1000.0 / t.prompt_ms : 0.0},
          {"predicted_n", t.n_predicted},
          {"predicted_ms", t.predicted_ms},
          {"predicted_per_token_ms", t.n_predicted > 0 ? t.predicted_ms / t.n_predicted : 0.0},
          {"predicted_per_second", t.predicted_ms > 0 ? t.n_predicted * 1000.0 / t.predicted_ms : 0.0},
          {"queue_ms", t.queue_ms}};
}

Json project_fields(const Json& full, const std::vector<std::string>& paths) {
  Json out = Json::object();
  for (const std::string& path : paths) {
    const Json* cur = &full;
    size_t start = 0;
    for (;;) {
      const size_t slash = path.find('/', start);
      const std::string key = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (!cur->is_object() || !cur->contains(key)) {
        cur = nullptr;
        break;
      }
      cur = &(*cur)[key];
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (cur) out[path] = *cur;
  }
  return out;
}

std::unique_ptr<ResponseShaper> make_chat_shaper(ShaperInfo info, const chat::ChatOutputFormat& fmt,
                                                 const std::string& prompt) {
  return std::make_unique<ChatShaper>(std::move(info), fmt, prompt);
}
std::unique_ptr<ResponseShaper> make_completions_shaper(ShaperInfo info) {
  return std::make_unique<CompletionsShaper>(std::move(info));
}
std::unique_ptr<ResponseShaper> make_native_shaper(ShaperInfo info, Json settings) {
  return std::make_unique<NativeShaper>(std::move(info), std::move(settings));
}

}  // namespace oscar::server
