// Turns a task's events into the JSON each API speaks. One shaper serves a
// request both ways: streamed (chunks() after every event) and whole
// (response() once the task is done). Chat output goes through the chat
// parser, so thinking lands in reasoning_content and tool calls in
// tool_calls, streamed or not.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_output_parser.h"
#include "server/sse.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace oscar::server {

using Json = nlohmann::ordered_json;

struct ShaperInfo {
  std::string id;           // chatcmpl-... / cmpl-...
  std::string model;        // alias reported back
  std::time_t created = 0;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;
  int n_probs = 0;
  int index = 0;               // the choice's (or prompt's) index in the request
  bool post_sampling_probs = false;  // probs as "prob"/"top_probs" (after the sampling chain)
  std::string fingerprint = "oscar.cpp";  // system_fingerprint: the build id
  // Native /completion only:
  std::vector<std::string> response_fields;  // project the final object onto these paths
  bool return_tokens = false;  // token ids in the final (non-streamed) object
  std::string prompt_text;     // the prompt as evaluated (special tokens shown)
  int n_prompt = 0;            // its tokens
};

class ResponseShaper {
 public:
  virtual ~ResponseShaper() = default;
  // Chunks to stream for one event (the final event included).
  virtual std::vector<Json> chunks(const Event& e) = 0;
  // The whole response, after the final event was passed to chunks().
  virtual Json response() const = 0;
  // Whether the stream ends with "data: [DONE]" (OpenAI) or not (native).
  virtual bool done_marker() const { return true; }
  // Whether every task of the request has finished.
  virtual bool complete() const = 0;
  // One chunk (or a mid-stream error) as server-sent-event text: data lines
  // for OpenAI; APIs whose clients dispatch on event names override these.
  virtual std::string frame(const Json& chunk) const { return sse_data(chunk); }
  virtual std::string frame_error(int status, const std::string& message) const { return sse_error(status, message); }
};

std::unique_ptr<ResponseShaper> make_chat_shaper(ShaperInfo info, const chat::ChatOutputFormat& fmt,
                                                 const std::string& prompt);
std::unique_ptr<ResponseShaper> make_completions_shaper(ShaperInfo info);
// llama.cpp's native /completion; `settings` is echoed as generation_settings.
std::unique_ptr<ResponseShaper> make_native_shaper(ShaperInfo info, Json settings);

// A request of several tasks (n > 1 choices, or several prompts): one
// shaper per task, given events by their index. OpenAI shapes merge into
// one response with a choice per task and usage summed (a prompt counted
// once for its `n_per_prompt` choices); native ones answer an array.
// Streamed chunks are the tasks' own (each names its index); with
// include_usage one usage chunk ends the stream.
enum class MergeKind { OpenAiChoices, NativeArray };
std::unique_ptr<ResponseShaper> make_multi_shaper(std::vector<std::unique_ptr<ResponseShaper>> tasks, MergeKind kind,
                                                  bool include_usage, int n_per_prompt);

// llama-server's response_fields: an object holding just these paths of
// `full`; "a/b" reads full["a"]["b"] and is stored under the key "a/b".
// Paths that are missing are left out.
Json project_fields(const Json& full, const std::vector<std::string>& paths);

// Usage object shared by the OpenAI shapes.
Json usage_json(const Timings& t);
Json timings_json(const Timings& t);

}  // namespace oscar::server
