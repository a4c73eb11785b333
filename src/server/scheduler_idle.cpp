// Scheduler, between steps: slot actions (save, restore, erase) that wait
// for their slot to be idle, and --sleep-idle-seconds (drop the cached
// conversations and give memory back when no work comes; wake for the next).
#include <algorithm>
#include <exception>

#include "server/api_error.h"
#include "server/scheduler.h"
#include "server/scheduler_slot.h"

namespace oscar::server {

bool Scheduler::wait_for_work() {
  std::unique_lock<std::mutex> l(m_);
  auto busy = [&] { return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->active; }); };
  auto work = [&] {
    return stopping_ || !queue_.empty() || busy() || !slot_commands_.empty() || (sleeping_ && external_users_ > 0);
  };
  // Idle means nothing arrived for the whole period: any submit wakes the
  // wait, and the next wait starts the period again. Work on the weights
  // outside the scheduler (keep_awake) holds the sleep off while it runs
  // and for a whole period after it.
  while (cfg_.sleep_after.count() > 0 && !sleeping_ && !cv_.wait_for(l, cfg_.sleep_after, work)) {
    if (external_users_ > 0 || Clock::now() - last_external_use_ < cfg_.sleep_after) continue;
    sleeping_ = true;  // before any memory goes: from here keep_awake() waits for the wake
    l.unlock();
    fall_asleep();
    l.lock();
  }
  cv_.wait(l, work);
  if (stopping_ && queue_.empty() && !busy()) {
    for (auto& c : slot_commands_)
      c->done.set_exception(std::make_exception_ptr(ApiError(503, "the server is shutting down", "unavailable_error")));
    slot_commands_.clear();
    return false;
  }
  return true;
}

// Called with sleeping_ already set (wait_for_work).
void Scheduler::fall_asleep() {
  const auto t0 = Clock::now();
  for (auto& s : slots_) {
    cache_.clear(s->id);
    s->cached.clear();
  }
  cache_.release_memory();
  host_cache_.clear();
  if (cfg_.sleep) cfg_.sleep();
  ++sleeps_;
  log_.info("sleeping after " + std::to_string(cfg_.sleep_after.count() / 1000) +
            " s without requests: cached conversations dropped, KV cache and weights memory given back (" +
            std::to_string((int)ms_between(t0, Clock::now())) + " ms); the next request reloads");
  publish();
}

void Scheduler::wake_up() {
  const auto t0 = Clock::now();
  if (cfg_.wake) cfg_.wake();
  cache_.restore_memory();
  {
    std::lock_guard<std::mutex> l(m_);
    sleeping_ = false;
  }
  awake_cv_.notify_all();
  log_.info("awake: weights and KV cache back in " + std::to_string((int)ms_between(t0, Clock::now())) + " ms");
  publish();
}

void Scheduler::fail_waiting(const std::string& why) {
  std::deque<std::pair<Task, Clock::time_point>> tasks;
  std::deque<std::shared_ptr<SlotCommand>> cmds;
  {
    std::lock_guard<std::mutex> l(m_);
    tasks.swap(queue_);
    cmds.swap(slot_commands_);
    stats_.queue_depth = 0;
    wake_error_ = why;
    ++wake_failures_;
  }
  awake_cv_.notify_all();
  for (auto& [task, queued_at] : tasks) {
    Event ev;
    ev.done = Done{FinishReason::Error, "", false, "", why, {}, -1};
    task.channel->push(std::move(ev));
  }
  for (auto& c : cmds) c->done.set_exception(std::make_exception_ptr(ApiError(500, why, "server_error")));
}

std::shared_ptr<void> Scheduler::keep_awake() {
  std::unique_lock<std::mutex> l(m_);
  if (stopping_) throw ApiError(503, "the server is shutting down", "unavailable_error");
  ++external_users_;
  const uint64_t failures = wake_failures_;
  cv_.notify_one();  // a sleeping scheduler wakes the weights for us
  awake_cv_.wait(l, [&] { return !sleeping_ || wake_failures_ != failures; });
  if (sleeping_) {
    --external_users_;
    throw ApiError(500, wake_error_, "server_error");
  }
  return std::shared_ptr<void>(nullptr, [this](void*) {
    {
      std::lock_guard<std::mutex> g(m_);
      --external_users_;
      last_external_use_ = Clock::now();
    }
    cv_.notify_one();
  });
}

void Scheduler::with_idle_slot(int id, std::function<void(SlotAccess&)> fn) {
  auto cmd = std::make_shared<SlotCommand>();
  cmd->id = id;
  cmd->fn = std::move(fn);
  std::future<void> done = cmd->done.get_future();
  {
    std::lock_guard<std::mutex> l(m_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "unavailable_error");
    slot_commands_.push_back(std::move(cmd));
  }
  cv_.notify_one();
  done.get();
}

void Scheduler::run_slot_commands() {
  std::deque<std::shared_ptr<SlotCommand>> cmds;
  {
    std::lock_guard<std::mutex> l(m_);
    cmds.swap(slot_commands_);
  }
  if (cmds.empty()) return;
  // A command for a slot that is generating waits for it to finish, as
  // llama-server defers it (it runs before a queued request can take the slot).
  std::deque<std::shared_ptr<SlotCommand>> deferred;
  for (auto it = cmds.begin(); it != cmds.end();) {
    const int id = (*it)->id;
    if (id >= 0 && id < (int)slots_.size() && slots_[(size_t)id]->active) {
      deferred.push_back(std::move(*it));
      it = cmds.erase(it);
    } else {
      ++it;
    }
  }
  if (!deferred.empty()) {
    std::lock_guard<std::mutex> l(m_);
    slot_commands_.insert(slot_commands_.begin(), deferred.begin(), deferred.end());
  }
  if (cmds.empty()) return;
  std::vector<std::exception_ptr> failed(cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) {
    auto& c = cmds[i];
    try {
      if (c->id < 0 || c->id >= (int)slots_.size()) throw ApiError(400, "Invalid slot ID");
      Slot& s = *slots_[(size_t)c->id];
      SlotAccess access{cache_, s.id, s.cached, [this, &s](int n) {
                          if (cache_.pages().pages_for(n) > idle_room(s.id)) return false;
                          cache_.clear(s.id);
                          s.cached.clear();
                          return reserve_dropping_idle(s.id, n, s.id);
                        }};
      c->fn(access);
      s.last_used = ++clock_;  // a restored conversation is the most recent one
    } catch (...) {
      failed[i] = std::current_exception();
    }
  }
  // /slots and /props show the result before the client hears the answer:
  // a GET right after an erase must not read the snapshot from before it.
  publish();
  for (size_t i = 0; i < cmds.size(); ++i) {
    if (failed[i]) cmds[i]->done.set_exception(failed[i]);
    else cmds[i]->done.set_value();
  }
}

}  // namespace oscar::server
