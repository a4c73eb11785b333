#include "server/responses_shaper.h"

#include "server/sse.h"

namespace oscar::server {

namespace {

class ResponsesShaper : public ResponseShaper {
 public:
  ResponsesShaper(ResponsesShaperInfo info, const chat::ChatOutputFormat& fmt, const std::string& prompt)
      : info_(std::move(info)), parser_(fmt, prompt) {}

  std::vector<Json> chunks(const Event& e) override {
    std::vector<Json> out;
    if (!started_) {
      emit(out, {{"type", "response.created"}, {"response", response_object("in_progress")}});
      emit(out, {{"type", "response.in_progress"}, {"response", response_object("in_progress")}});
      started_ = true;
    }
    for (const auto& t : e.tokens) add(parser_.feed(t.text), out);
    if (e.done) {
      done_ = *e.done;
      finished_ = true;
      add(parser_.feed(e.done->tail), out);
      add(parser_.finish(), out);
      close_item(out);
      const bool incomplete = done_.reason == FinishReason::Length;
      emit(out, {{"type", incomplete ? "response.incomplete" : "response.completed"}, {"response", response()}});
    }
    return out;
  }

  Json response() const override { return response_object(done_.reason == FinishReason::Length ? "incomplete" : "completed"); }
  bool complete() const override { return finished_; }
  bool done_marker() const override { return false; }
  std::string frame(const Json& chunk) const override {
    return "event: " + chunk["type"].get<std::string>() + "\n" + sse_data(chunk);
  }
  std::string frame_error(int status, const std::string& message) const override {
    Json e = {{"type", "error"}, {"code", status >= 500 ? "server_error" : "invalid_request_error"},
              {"message", message}, {"param", nullptr}, {"sequence_number", seq_}};
    return "event: error\n" + sse_data(e);
  }

 private:
  Json response_object(const char* status) const {
    Json r = {{"id", info_.id},
              {"object", "response"},
              {"created_at", (long long)info_.created},
              {"status", status},
              {"error", nullptr},
              {"incomplete_details", std::string(status) == "incomplete" ? Json({{"reason", "max_output_tokens"}})
                                                                          : Json(nullptr)},
              {"model", info_.model},
              {"output", finished_ ? items_ : Json::array()},
              {"parallel_tool_calls", true},
              {"previous_response_id", nullptr},
              {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
              {"store", false},
              {"text", {{"format", {{"type", "text"}}}}},
              {"truncation", "disabled"},
              {"usage", nullptr}};
    for (auto it = info_.echo.begin(); it != info_.echo.end(); ++it) r[it.key()] = it.value();
    if (finished_) {
      std::string text;
      for (const auto& item : items_)
        if (item["type"] == "message")
          for (const auto& p : item["content"]) text += p["text"].get<std::string>();
      r["output_text"] = text;
      r["usage"] = {{"input_tokens", info_.n_input},
                    {"input_tokens_details", {{"cached_tokens", done_.timings.n_cached}}},
                    {"output_tokens", done_.timings.n_predicted},
                    {"output_tokens_details", {{"reasoning_tokens", 0}}},
                    {"total_tokens", info_.n_input + done_.timings.n_predicted}};
    }
    return r;
  }

  void emit(std::vector<Json>& out, Json ev) {
    ev["sequence_number"] = seq_++;
    out.push_back(std::move(ev));
  }
  std::string item_id(const char* prefix) const {
    return std::string(prefix) + info_.id.substr(info_.id.find('_') + 1) + "_" + std::to_string(items_.size());
  }
  int index() const { return (int)items_.size() - 1; }

  void open_item(Json item, std::vector<Json>& out) {
    close_item(out);
    items_.push_back(item);
    open_ = true;
    emit(out, {{"type", "response.output_item.added"}, {"output_index", index()}, {"item", item}});
  }
  void close_item(std::vector<Json>& out) {
    if (!open_) return;
    open_ = false;
    Json& item = items_.back();
    const Json id = item["id"];
    if (item["type"] == "message") {
      Json& part = item["content"][0];
      emit(out, {{"type", "response.output_text.done"}, {"item_id", id}, {"output_index", index()},
                 {"content_index", 0}, {"text", part["text"]}, {"logprobs", Json::array()}});
      emit(out, {{"type", "response.content_part.done"}, {"item_id", id}, {"output_index", index()},
                 {"content_index", 0}, {"part", part}});
    } else if (item["type"] == "reasoning") {
      emit(out, {{"type", "response.reasoning_text.done"}, {"item_id", id}, {"output_index", index()},
                 {"content_index", 0}, {"text", item["content"][0]["text"]}});
    }
    item["status"] = "completed";
    emit(out, {{"type", "response.output_item.done"}, {"output_index", index()}, {"item", item}});
  }

  void add_reasoning(const std::string& text, std::vector<Json>& out) {
    if (text.empty()) return;
    if (!open_ || items_.back()["type"] != "reasoning") {
      // Added without content, as OpenAI does; the text arrives in deltas.
      open_item({{"id", item_id("rs_")}, {"type", "reasoning"}, {"summary", Json::array()}}, out);
      items_.back()["content"] = Json::array({{{"type", "reasoning_text"}, {"text", ""}}});
    }
    Json& t = items_.back()["content"][0]["text"];
    t = t.get<std::string>() + text;
    emit(out, {{"type", "response.reasoning_text.delta"}, {"item_id", items_.back()["id"]}, {"output_index", index()},
               {"content_index", 0}, {"delta", text}});
  }
  void add_text(const std::string& text, std::vector<Json>& out) {
    if (text.empty()) return;
    if (!open_ || items_.back()["type"] != "message") {
      open_item({{"id", item_id("msg_")}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"},
                 {"content", Json::array()}}, out);
      const Json part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
      items_.back()["content"].push_back(part);
      emit(out, {{"type", "response.content_part.added"}, {"item_id", items_.back()["id"]}, {"output_index", index()},
                 {"content_index", 0}, {"part", part}});
    }
    Json& t = items_.back()["content"][0]["text"];
    t = t.get<std::string>() + text;
    emit(out, {{"type", "response.output_text.delta"}, {"item_id", items_.back()["id"]}, {"output_index", index()},
               {"content_index", 0}, {"delta", text}, {"logprobs", Json::array()}});
  }
  void add(const chat::ChatDelta& d, std::vector<Json>& out) {
    add_reasoning(d.reasoning, out);
    add_text(d.content, out);
    for (const auto& c : d.tool_calls) {
      const std::string args = c.arguments.dump();
      open_item({{"id", item_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
                 {"call_id", item_id("call_")}, {"name", c.name}, {"arguments", ""}}, out);
      const Json id = items_.back()["id"];
      emit(out, {{"type", "response.function_call_arguments.delta"}, {"item_id", id}, {"output_index", index()},
                 {"delta", args}});
      items_.back()["arguments"] = args;
      emit(out, {{"type", "response.function_call_arguments.done"}, {"item_id", id}, {"output_index", index()},
                 {"arguments", args}});
      close_item(out);
    }
  }

  ResponsesShaperInfo info_;
  chat::ChatOutputParser parser_;
  bool started_ = false, finished_ = false;
  bool open_ = false;  // the last item still takes deltas
  int seq_ = 0;
  Json items_ = Json::array();
  Done done_;
};

}  // namespace

std::unique_ptr<ResponseShaper> make_responses_shaper(ResponsesShaperInfo info, const chat::ChatOutputFormat& fmt,
                                                      const std::string& prompt) {
  return std::make_unique<ResponsesShaper>(std::move(info), fmt, prompt);
}

}  // namespace oscar::server
