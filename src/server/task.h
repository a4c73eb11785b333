// What flows between the HTTP threads and the scheduler thread: a Task (the
// tokenized prompt and how to generate) goes in; Events come back through
// the task's Channel. The channel's cancel flag is how an HTTP thread tells
// the scheduler that the client went away.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sampling/sampler.h"

namespace oscar::server {

struct GenParams {
  sampling::SamplerSettings sampling;
  int n_predict = -1;               // -1: until EOS or the slot's context is full
  std::vector<std::string> stop;    // stop strings (never emitted)
  bool ignore_eos = false;
  bool cache_prompt = true;         // reuse the slot's cached common prefix
  int n_probs = 0;                  // top alternatives per token (0: none)
  bool logprobs = false;            // report each sampled token's log-probability
  // Probabilities after the sampling chain (top-k, top-p, temperature...)
  // instead of the model's raw distribution, as llama-server's field says.
  bool post_sampling_probs = false;
  bool return_progress = false;     // stream prompt-processing progress events
  bool timings_per_token = false;   // timings with every streamed event
  // Context shift (--context-shift): prompt tokens kept at the start when the
  // context is full (-1: the whole prompt; BOS is kept besides), and how many
  // after them are dropped (0: half of the rest), as llama-server's fields.
  int n_keep = 0;
  int n_discard = 0;
};

struct TokenProb {
  int32_t token = 0;
  std::string piece;
  float logprob = 0;
};

// One generated token and the text it made final (text may be "" while a
// UTF-8 sequence or a possible stop string is held back).
struct TokenOut {
  int32_t token = 0;
  std::string text;
  std::optional<TokenProb> prob;     // when logprobs were asked for
  std::vector<TokenProb> top;        // n_probs alternatives
};

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", ...

struct Timings {
  int n_prompt = 0;      // prompt tokens
  int n_cached = 0;      // of which reused from the slot's cache
  int n_predicted = 0;   // generated tokens
  double prompt_ms = 0;  // from slot assignment to the first token's logits
  double predicted_ms = 0;
  double queue_ms = 0;   // waiting for a free slot
};

struct Done {
  FinishReason reason = FinishReason::Stop;
  std::string stop_word;   // the stop string that ended generation, if any
  bool stopped_eos = false;
  std::string tail;        // held-back text released at the end
  std::string error;       // when reason == Error
  Timings timings;
  int slot = -1;
  bool truncated = false;  // generation stopped because the slot's context was full
};

// How far a prompt's evaluation has got (llama-server's prompt_progress).
struct PromptProgress {
  int total = 0;      // prompt tokens
  int cache = 0;      // of which reused from the slot's cache
  int processed = 0;  // in the cache so far (reused ones included)
  double time_ms = 0; // since the prompt's evaluation began
};

struct Event {
  std::vector<TokenOut> tokens;  // may be empty
  int slot = -1;
  int index = 0;                 // which task of a request (several prompts or choices)
  std::optional<PromptProgress> progress;  // when return_progress was asked
  std::optional<Timings> timings;          // running timings (timings_per_token)
  std::optional<Done> done;
};

// A one-producer, one-consumer queue of events with a cancel flag. A
// request made of several tasks (several prompts, or n > 1 choices) gives
// each task a channel that forwards to the request's shared one, tagging
// its events with the task's index; cancelling the shared channel cancels
// them all.
class Channel {
 public:
  Channel() = default;
  Channel(std::shared_ptr<Channel> shared, int index) : shared_(std::move(shared)), index_(index) {}

  void push(Event e) {
    if (shared_) {
      e.index = index_;
      shared_->push(std::move(e));
      return;
    }
    {
      std::lock_guard<std::mutex> l(m_);
      q_.push_back(std::move(e));
    }
    cv_.notify_one();
  }
  // Waits up to `timeout` for events; returns all queued (possibly none).
  std::vector<Event> wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait_for(l, timeout, [&] { return !q_.empty(); });
    std::vector<Event> out(std::make_move_iterator(q_.begin()), std::make_move_iterator(q_.end()));
    q_.clear();
    return out;
  }
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load() || (shared_ && shared_->cancelled()); }

 private:
  std::shared_ptr<Channel> shared_;
  int index_ = 0;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Event> q_;
  std::atomic<bool> cancelled_{false};
};

struct Task {
  std::vector<int32_t> prompt;
  GenParams params;
  std::shared_ptr<Channel> channel;
  int id_slot = -1;  // a requested slot (-1: any)
  int index = 0;     // position of the task's result in its request
};

}  // namespace oscar::server
