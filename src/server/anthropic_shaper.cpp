#include "server/anthropic_shaper.h"

#include "server/anthropic_error.h"
#include "server/sse.h"

namespace oscar::server {

namespace {

class AnthropicShaper : public ResponseShaper {
 public:
  AnthropicShaper(AnthropicShaperInfo info, const chat::ChatOutputFormat& fmt, const std::string& prompt)
      : info_(std::move(info)), parser_(fmt, prompt) {}

  std::vector<Json> chunks(const Event& e) override {
    std::vector<Json> out;
    if (!started_) {
      Json m = message(Json::array(), nullptr);
      m["usage"]["output_tokens"] = 0;
      out.push_back({{"type", "message_start"}, {"message", m}});
      out.push_back({{"type", "ping"}});  // as Anthropic's streams do; clients skip it
      started_ = true;
    }
    for (const auto& t : e.tokens) add(parser_.feed(t.text), out);
    if (e.done) {
      done_ = *e.done;
      finished_ = true;
      add(parser_.feed(e.done->tail), out);
      add(parser_.finish(), out);
      close_block(out);
      out.push_back({{"type", "message_delta"},
                     {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_sequence()}}},
                     {"usage", usage()}});
      out.push_back({{"type", "message_stop"}});
    }
    return out;
  }

  Json response() const override { return message(blocks_, stop_reason()); }
  bool complete() const override { return finished_; }
  bool done_marker() const override { return false; }
  // Anthropic's clients dispatch on the event name, which is each event's type.
  std::string frame(const Json& chunk) const override {
    return "event: " + chunk["type"].get<std::string>() + "\n" + sse_data(chunk);
  }
  std::string frame_error(int status, const std::string& message) const override {
    return "event: error\n" + sse_data(anthropic_error_body(status, message));
  }

 private:
  Json usage() const {
    return {{"input_tokens", info_.n_input}, {"output_tokens", done_.timings.n_predicted},
            {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0}};
  }
  Json message(Json content, Json stop) const {
    return {{"id", info_.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", info_.model},
            {"content", std::move(content)},
            {"stop_reason", stop},
            {"stop_sequence", stop.is_null() ? Json(nullptr) : stop_sequence()},
            {"usage", usage()}};
  }
  Json stop_reason() const {
    if (done_.reason == FinishReason::Length) return "max_tokens";
    if (has_tool_use_) return "tool_use";
    if (!done_.stop_word.empty()) return "stop_sequence";
    return "end_turn";
  }
  Json stop_sequence() const {
    return done_.stop_word.empty() || done_.reason == FinishReason::Length ? Json(nullptr) : Json(done_.stop_word);
  }

  void open_block(Json block, std::vector<Json>& out) {
    close_block(out);
    out.push_back({{"type", "content_block_start"}, {"index", blocks_.size()}, {"content_block", block}});
    blocks_.push_back(std::move(block));
    open_ = true;
  }
  void close_block(std::vector<Json>& out) {
    if (!open_) return;
    out.push_back({{"type", "content_block_stop"}, {"index", blocks_.size() - 1}});
    open_ = false;
  }
  // Appends to the open block of `type` ("text" / "thinking"), opening one when the kind changes.
  void append(const char* type, const std::string& text, std::vector<Json>& out) {
    if (text.empty()) return;
    if (!open_ || blocks_.back()["type"] != type) {
      Json b = {{"type", type}, {type, ""}};
      if (std::string(type) == "thinking") b["signature"] = "";
      open_block(b, out);
    }
    Json& b = blocks_.back();
    b[type] = b[type].get<std::string>() + text;
    const std::string delta_type = std::string(type) + "_delta";
    out.push_back({{"type", "content_block_delta"}, {"index", blocks_.size() - 1},
                   {"delta", {{"type", delta_type}, {type, text}}}});
  }
  void add(const chat::ChatDelta& d, std::vector<Json>& out) {
    append("thinking", d.reasoning, out);
    append("text", d.content, out);
    for (const auto& c : d.tool_calls) {
      const std::string id = "toolu_" + info_.id.substr(info_.id.find('_') + 1) + "_" + std::to_string(n_calls_++);
      open_block({{"type", "tool_use"}, {"id", id}, {"name", c.name}, {"input", Json::object()}}, out);
      blocks_.back()["input"] = c.arguments;
      out.push_back({{"type", "content_block_delta"}, {"index", blocks_.size() - 1},
                     {"delta", {{"type", "input_json_delta"}, {"partial_json", c.arguments.dump()}}}});
      close_block(out);
      has_tool_use_ = true;
    }
  }

  AnthropicShaperInfo info_;
  chat::ChatOutputParser parser_;
  bool started_ = false;
  bool open_ = false;  // the last block still takes deltas
  bool has_tool_use_ = false;
  int n_calls_ = 0;
  Json blocks_ = Json::array();
  Done done_;
  bool finished_ = false;  // the task's Done has arrived
};

}  // namespace

std::unique_ptr<ResponseShaper> make_anthropic_shaper(AnthropicShaperInfo info, const chat::ChatOutputFormat& fmt,
                                                      const std::string& prompt) {
  return std::make_unique<AnthropicShaper>(std::move(info), fmt, prompt);
}

}  // namespace oscar::server
