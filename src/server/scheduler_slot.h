// The scheduler's per-slot state, shared by the files that implement
// Scheduler (scheduler.cpp: the loop and its steps; scheduler_room.cpp:
// room in the KV pool; scheduler_idle.cpp: slot actions and sleeping
// between steps). Private to them: not part of the interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/sampler.h"
#include "server/scheduler.h"
#include "server/stop_matcher.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace oscar::server {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Scheduler::Slot {
  int id = 0;
  bool active = false;
  std::vector<int32_t> cached;  // tokens whose K/V sit in sequence `id`
  uint64_t last_used = 0;
  Task task;
  size_t n_past = 0;            // prompt tokens in the cache so far
  bool generating = false;
  int32_t pending = -1;         // sampled token to evaluate next step
  int n_gen = 0;
  int n_cached_at_start = 0;
  // After a context shift: the kept tokens whose K/V must be evaluated again
  // at their new positions, ending with the pending token (whose logits give
  // the next one); evaluated like a prompt, in chunks.
  std::vector<int32_t> replay;
  size_t n_replayed = 0;
  bool shifted = false;         // the context was shifted: the result says "truncated"
  bool replaying() const { return n_replayed < replay.size(); }
  std::unique_ptr<sampling::Sampler> sampler;
  std::unique_ptr<tok::StreamDetokenizer> detok;
  std::unique_ptr<StopMatcher> stop;
  std::vector<TokenOut> out;    // produced this step, sent after it
  Clock::time_point t_queued, t_start, t_first;
};

}  // namespace oscar::server
