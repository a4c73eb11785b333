// The continuous-batching loop. One thread owns the model's Forward and the
// KV cache; each step it evaluates one batch holding the next token of every
// generating slot, then fills the rest of the step's token budget (the
// physical batch size) with prompt chunks, oldest request first, so a long
// prompt is spread over several steps and never stalls the streams that are
// already decoding. Requests beyond the free slots wait in a FIFO queue.
//
// With a unified cache (one page pool for all slots, kv_cache.h) a request
// takes the pages of its whole prompt when it gets a slot; one that does not
// fit waits in the queue (later ones wait behind it), and idle slots' cached
// tokens are dropped, least recently used first, to make room (kept in host
// memory with --cache-ram: host_prompt_cache.h). A generation
// that needs a page the pool no longer has stops with finish reason "length".
// HTTP threads only submit tasks and read their channels.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "grammar/mask_cache.h"
#include "grammar/token_trie.h"
#include "core/log.h"
#include "kv/kv_cache.h"
#include "runtime/forward.h"
#include "server/host_prompt_cache.h"
#include "server/prefix_sharing.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace oscar::server {

struct SchedulerConfig {
  int n_slots = 1;
  int n_ctx_slot = 0;   // positions per slot (the cache's per-sequence capacity)
  int n_ubatch = 512;   // tokens per forward call
  int64_t host_cache_bytes = 0;  // --cache-ram: prompt cache in host memory (-1: no limit, 0: off)
  // --context-shift: a generation that fills its context (or finds the pool
  // full) drops part of its cached tokens and goes on, instead of ending
  // with "length" (shift_context()).
  bool context_shift = false;
  // --sleep-idle-seconds: after this long with no request and no slot
  // action, the cached conversations are dropped, the KV memory is given
  // back and `sleep` runs (the weights' memory: the server's to give); the
  // next request runs `wake` first and waits for it. 0: never.
  std::chrono::milliseconds sleep_after{0};
  std::function<void()> sleep, wake;
};

struct SlotInfo {
  int id = 0;
  bool processing = false;
  int n_ctx = 0;
  int n_cached = 0;     // positions in the slot's cache
  int n_prompt = 0;     // current / last task's prompt tokens
  int n_decoded = 0;    // generated so far
  int kv_positions_held = 0;  // positions of the KV pages the slot holds (whole pages)
  kv::KvCache::Usage kv;  // what the slot's cached positions occupy
};

struct SchedulerStats {
  uint64_t requests_total = 0;       // tasks that finished (any reason)
  uint64_t requests_cancelled = 0;
  uint64_t prompt_tokens_total = 0;  // prompt tokens evaluated (reused ones not counted)
  uint64_t predicted_tokens_total = 0;
  uint64_t n_decode_total = 0;       // forward calls
  double prompt_seconds_total = 0;   // wall time of steps that held prompt tokens
  double predicted_seconds_total = 0;  // wall time of steps that only decoded
  int queue_depth = 0;
  int processing = 0;
  kv::KvCache::Usage kv;             // summed over slots
  size_t kv_bytes_allocated = 0;
  bool kv_unified = false;           // one pool for all slots (else -c / -np each)
  int kv_pool_positions = 0;         // the pool's positions (split: all slots')
  int kv_pool_used_positions = 0;    // held by sequences, in whole pages
  uint64_t kv_slots_dropped = 0;     // idle slots' caches dropped for room
  int kv_pool_shared_positions = 0;  // in pages listed by more than one slot (each counted once)
  uint64_t kv_prefixes_shared = 0;   // prompts that took their prefix from another slot's pages
  HostCacheStats host_cache;         // --cache-ram (host_prompt_cache.h)
  uint64_t context_shifts = 0;       // --context-shift: times a generation dropped tokens to go on
  bool sleeping = false;             // --sleep-idle-seconds: memory given back until the next request
  uint64_t sleeps = 0;               // times the server went to sleep
};

// What a slot action (save, restore, erase: slot_persistence.h) may touch.
// It runs on the scheduler thread between steps, on an idle slot.
struct SlotAccess {
  kv::KvCache& cache;
  int seq;                       // the slot's cache sequence
  std::vector<int32_t>& tokens;  // the tokens whose K/V the sequence holds
  // Empties the slot and gives it pages for n positions, dropping other idle
  // slots' caches if the pool is short; false, touching nothing, when even
  // that cannot make room.
  std::function<bool(int n)> make_room;
};

class Scheduler {
 public:
  Scheduler(const tok::Tokenizer& tokenizer, kv::KvCache& cache, runtime::Forward& fwd, SchedulerConfig cfg,
            Logger log);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a task; events arrive on task.channel. Throws ApiError(503) once
  // shutdown has begun.
  void submit(Task task);
  // Stops taking tasks, lets queued and running ones finish, joins the thread.
  void shutdown();
  // Cancels every queued and running task (a second Ctrl-C during shutdown).
  void cancel_all() { cancel_all_.store(true); cv_.notify_one(); }

  // Runs fn on the scheduler thread between steps with slot `id` once the
  // slot is idle (after the request it is processing, if any) and waits for
  // it; fn's exceptions come back here. ApiError 400 for a slot that does
  // not exist, 503 once shutdown has begun.
  void with_idle_slot(int id, std::function<void(SlotAccess&)> fn);

  // For work on the model's weights outside the scheduler (the embedder):
  // wakes them if the scheduler sleeps (--sleep-idle-seconds), and keeps it
  // from sleeping until the returned guard is dropped. ApiError 500 when
  // the weights cannot be reloaded, 503 once shutdown has begun.
  std::shared_ptr<void> keep_awake();

  const SchedulerConfig& config() const { return cfg_; }
  std::vector<SlotInfo> slots() const;
  SchedulerStats stats() const;

 private:
  struct Slot;
  void run();
  // Waits for work; with sleep_after, falls asleep when none comes in time.
  // Returns false when the loop should end (shutdown with nothing left).
  bool wait_for_work();
  void fall_asleep();
  void wake_up();  // throws what cfg_.wake throws
  void fail_waiting(const std::string& why);  // queued tasks and slot actions, after a failed wake
  void run_slot_commands();  // with_idle_slot()'s requests
  int idle_room(int seq) const;  // pages seq could have: free, its own, idle slots'
  void assign_queued();
  // A queued task taken for a slot (take_assignable, under m_), set up
  // there by start_task (outside m_).
  struct Assignment {
    Task task;
    std::chrono::steady_clock::time_point queued_at;
    Placement place;
    HostPromptCache::Match ram;
  };
  bool take_assignable(Assignment& a);  // false: nothing can start now
  void start_task(Assignment& a);
  void drop_cancelled();
  bool step();  // one batch; false when there was nothing to do
  // One step's batch: every generating slot's next token, then prompt
  // chunks (and context-shift replays) up to the physical batch size.
  struct StepBatch {
    std::vector<runtime::BatchToken> tokens;
    std::vector<Slot*> rows;  // the slot of each logits row, in batch order
    std::vector<Slot*> fed;   // prompts that advanced (for progress reports)
    bool has_prompt = false;
  };
  StepBatch build_batch();
  void fail_batch(const StepBatch& b, const std::exception& e);  // every slot in it ends with the error
  size_t commit_batch(const StepBatch& b);  // the evaluated tokens join their slots' caches; returns prompt tokens
  void send_outputs(std::chrono::steady_clock::time_point now);  // each slot's tokens of this step
  void on_logits(Slot& s, const float* logits);
  // Unified pool: whether task t's prompt can have its pages where `place`
  // puts it, counting idle slots' pages as free (unless a busy slot lists
  // them too).
  // at_least: positions the slot needs besides the prompt's (a host cache
  // entry imported whole before it is cut back).
  bool prompt_fits(const Task& t, const Placement& place, int at_least = 0) const;
  // Imports a host prompt cache entry into slot s (its cache dropped),
  // reserving its pages first; returns the positions kept (0: no room).
  size_t load_from_host(Slot& s, const HostPromptCache::Match& m);
  // Gives slot s (its cache dropped) donor's first n cached positions through
  // the pool (kv::KvCache::share_prefix); returns how many it got.
  size_t share_prefix(Slot& s, const Slot& donor, size_t n);
  // Drops idle slots' caches, least recently used first (never `spare`),
  // until seq gets pages for n positions; false when even that is not enough.
  bool reserve_dropping_idle(int seq, int n, int spare);
  void grow_or_stop_generations();
  // --context-shift, as llama-server: keeps the first n_keep tokens (and
  // BOS), drops the n_discard after them, and queues the rest and the
  // pending token to be evaluated again at their new positions; false when
  // nothing can be dropped or the pool has no room for the rest.
  bool shift_context(Slot& s);
  void finish(Slot& s, FinishReason reason);
  Timings timings_of(const Slot& s, bool started, std::chrono::steady_clock::time_point now) const;
  void report_progress(Slot& s, std::chrono::steady_clock::time_point now);  // when the task asked for it
  void publish();
  // Slots busy and queue depth only, cheap enough to publish between steps.
  void publish_occupancy();
  void count_occupancy();  // m_ held
  // The vocabulary's token bytes for grammar-constrained sampling, built on
  // first use (scheduler thread only).
  std::shared_ptr<const grammar::TokenTrie> grammar_vocab();

  const tok::Tokenizer& tok_;
  std::shared_ptr<const grammar::TokenTrie> grammar_vocab_;
  grammar::MaskStore grammar_masks_;  // token masks shared by requests under the same grammar
  kv::KvCache& cache_;
  runtime::Forward& fwd_;
  SchedulerConfig cfg_;
  Logger log_;
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t clock_ = 0;  // assignment counter (slot recency)
  uint64_t slots_dropped_ = 0;  // idle slots' caches dropped for room
  uint64_t prefixes_shared_ = 0;  // prompts that took another slot's prefix
  HostPromptCache host_cache_;    // --cache-ram: conversations dropped from the slots
  uint64_t context_shifts_ = 0;
  bool sleeping_ = false;  // written by the scheduler thread under m_; mirrored in stats_
  uint64_t sleeps_ = 0;
  // keep_awake(): users outside the scheduler, their last use, and the
  // failed wakes they wait on (all guarded by m_).
  int external_users_ = 0;
  std::chrono::steady_clock::time_point last_external_use_{};
  uint64_t wake_failures_ = 0;
  std::string wake_error_;
  std::condition_variable awake_cv_;  // sleeping_ turned false, or a wake failed

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<Task, std::chrono::steady_clock::time_point>> queue_;
  struct SlotCommand {
    int id;
    std::function<void(SlotAccess&)> fn;
    std::promise<void> done;
  };
  std::deque<std::shared_ptr<SlotCommand>> slot_commands_;  // guarded by m_
  bool stopping_ = false;
  std::atomic<bool> cancel_all_{false};
  SchedulerStats stats_;             // guarded by m_
  std::vector<SlotInfo> slot_info_;  // guarded by m_
  std::thread thread_;
};

}  // namespace oscar::server
