// Requests that run several tasks at once (n > 1 choices, several prompts):
// each task keeps its own shaper, and this one routes events by index and
// merges the answers the way llama-server does (one OpenAI response with a
// choice per task; an array for the native endpoint).
#include "server/response_shaper.h"

namespace oscar::server {

namespace {

class MultiShaper : public ResponseShaper {
 public:
  MultiShaper(std::vector<std::unique_ptr<ResponseShaper>> tasks, MergeKind kind, bool include_usage,
              int n_per_prompt)
      : tasks_(std::move(tasks)), kind_(kind), include_usage_(include_usage),
        n_per_prompt_(std::max(1, n_per_prompt)) {}

  std::vector<Json> chunks(const Event& e) override {
    if (e.index < 0 || e.index >= (int)tasks_.size()) return {};
    std::vector<Json> out = tasks_[(size_t)e.index]->chunks(e);
    if (!out.empty()) last_chunk_ = out.back();
    if (e.done && complete() && include_usage_ && kind_ == MergeKind::OpenAiChoices) {
      // One usage chunk for the whole request, shaped like the others (object, id, model).
      Json u = last_chunk_;
      u["choices"] = Json::array();  // keeps the finishing choice's timings, as llama-server's last chunk
      u["usage"] = merged_usage();
      out.push_back(u);
    }
    return out;
  }

  Json response() const override {
    if (kind_ == MergeKind::NativeArray) {
      Json arr = Json::array();
      for (const auto& t : tasks_) arr.push_back(t->response());
      return arr;
    }
    Json r = tasks_.front()->response();
    for (size_t i = 1; i < tasks_.size(); ++i) r["choices"].push_back(tasks_[i]->response()["choices"][0]);
    r["usage"] = merged_usage();
    return r;
  }

  bool done_marker() const override { return tasks_.front()->done_marker(); }
  bool complete() const override {
    for (const auto& t : tasks_)
      if (!t->complete()) return false;
    return true;
  }

 private:
  // Completion tokens of every choice; prompt tokens once per prompt (its
  // n choices share it), as OpenAI counts them.
  Json merged_usage() const {
    long long prompt = 0, cached = 0, completion = 0;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      const Json u = tasks_[i]->response()["usage"];
      completion += u.value("completion_tokens", 0);
      if (i % (size_t)n_per_prompt_ != 0) continue;
      prompt += u.value("prompt_tokens", 0);
      cached += u["prompt_tokens_details"].value("cached_tokens", 0);
    }
    return {{"completion_tokens", completion},
            {"prompt_tokens", prompt},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  }

  std::vector<std::unique_ptr<ResponseShaper>> tasks_;
  MergeKind kind_;
  bool include_usage_;
  int n_per_prompt_;
  Json last_chunk_;
};

}  // namespace

std::unique_ptr<ResponseShaper> make_multi_shaper(std::vector<std::unique_ptr<ResponseShaper>> tasks, MergeKind kind,
                                                  bool include_usage, int n_per_prompt) {
  return std::make_unique<MultiShaper>(std::move(tasks), kind, include_usage, n_per_prompt);
}

}  // namespace oscar::server
