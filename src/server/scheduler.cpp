#include "server/scheduler.h"

#include <algorithm>
#include <exception>

#include "core/error.h"
#include "grammar/vocab_bytes.h"
#include "server/api_error.h"
#include "server/logprobs.h"
#include "server/prefix_reuse.h"
#include "server/prefix_sharing.h"
#include "server/scheduler_slot.h"
#include "server/stop_matcher.h"

namespace oscar::server {

namespace {
// Greedy decoding with nothing that reshapes the logits is an argmax; the
// sampler would sort the whole vocabulary for the same answer (ties go to
// the smaller id in both), which costs more than a decode step on large
// vocabularies.
bool plain_greedy(const sampling::SamplerSettings& s) {
  return s.temperature <= 0.0f && s.logit_bias.empty() && s.repeat_penalty == 1.0f && s.frequency_penalty == 0.0f &&
         s.presence_penalty == 0.0f && !s.grammar;
}

int32_t argmax(const float* x, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "stop";
}

Scheduler::Scheduler(const tok::Tokenizer& tokenizer, kv::KvCache& cache, runtime::Forward& fwd,
                     SchedulerConfig cfg, Logger log)
    : tok_(tokenizer), cache_(cache), fwd_(fwd), cfg_(cfg), log_(log), host_cache_(cfg.host_cache_bytes) {
  require(cfg_.n_slots >= 1 && cfg_.n_slots <= cache.n_seq(), "scheduler: slot count does not match the cache");
  require(cfg_.n_ctx_slot >= 1 && cfg_.n_ctx_slot <= cache.capacity(), "scheduler: slot context exceeds the cache");
  require(cfg_.n_ubatch >= 1, "scheduler: batch size must be positive");
  for (int i = 0; i < cfg_.n_slots; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->id = i;
    cache_.clear(i);
  }
  log_.info(host_cache_description(cfg_.host_cache_bytes));
  publish();
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { shutdown(); }

void Scheduler::submit(Task task) {
  {
    std::lock_guard<std::mutex> l(m_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "unavailable_error");
    queue_.emplace_back(std::move(task), Clock::now());
    stats_.queue_depth = (int)queue_.size();
  }
  cv_.notify_one();
}

void Scheduler::shutdown() {
  {
    std::lock_guard<std::mutex> l(m_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::vector<SlotInfo> Scheduler::slots() const {
  std::lock_guard<std::mutex> l(m_);
  return slot_info_;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> l(m_);
  return stats_;
}

void Scheduler::run() {
  while (wait_for_work()) {
    if (sleeping_) {
      try {
        wake_up();
      } catch (const std::exception& e) {
        log_.error(std::string("cannot wake up: ") + e.what());
        fail_waiting(std::string("the server could not reload the model after sleeping: ") + e.what());
        continue;
      }
    }
    try {
      run_slot_commands();
      drop_cancelled();
      assign_queued();
      publish_occupancy();  // a balancer's /health?fail_on_no_slot=1 must see a slot busy before its first token
      step();
    } catch (const std::exception& e) {
      // Nothing here should throw; if something does, fail the running
      // tasks rather than take the server down.
      log_.error(std::string("scheduler step failed: ") + e.what());
      for (auto& s : slots_) {
        if (!s->active) continue;
        Event ev;
        ev.slot = s->id;
        ev.done = Done{FinishReason::Error, "", false, "", e.what(), {}, s->id};
        s->task.channel->push(std::move(ev));
        s->active = false;
        s->generating = false;
        cache_.clear(s->id);
        s->cached.clear();
      }
    }
    publish();
  }
}

void Scheduler::drop_cancelled() {
  std::deque<std::pair<Task, Clock::time_point>> dropped;
  {
    std::lock_guard<std::mutex> l(m_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (cancel_all_.load()) it->first.channel->cancel();
      if (it->first.channel->cancelled()) {
        dropped.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.requests_cancelled += dropped.size();
    stats_.queue_depth = (int)queue_.size();
  }
  // Someone may still be listening (cancel_all during shutdown): say so.
  for (auto& [task, queued_at] : dropped) {
    Event ev;
    ev.done = Done{FinishReason::Cancelled, "", false, "", "", {}, -1};
    ev.done->timings.n_prompt = (int)task.prompt.size();
    task.channel->push(std::move(ev));
  }
  for (auto& s : slots_)
    if (s->active && (cancel_all_.load() || s->task.channel->cancelled())) finish(*s, FinishReason::Cancelled);
}

void Scheduler::assign_queued() {
  // The queue is read under the lock, the slot set up outside it: saving a
  // long conversation to host memory, or building the grammar vocabulary,
  // must not hold up HTTP threads that submit or read the stats.
  for (;;) {
    Assignment a;
    {
      std::lock_guard<std::mutex> l(m_);
      if (!take_assignable(a)) return;
    }
    start_task(a);
  }
}

bool Scheduler::take_assignable(Assignment& a) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    const Task& t = it->first;
    std::vector<SlotView> views;
    for (const auto& s : slots_) {
      const bool allowed = t.id_slot < 0 || t.id_slot == s->id;
      views.push_back({!s->active && allowed, &s->cached, s->last_used});
    }
    // A prefix cached in another slot is shared through the pool's pages
    // (unified pool only: split slots own their rows).
    const Placement place = place_prompt(views, t.prompt, t.params.cache_prompt && cache_.unified());
    if (place.slot < 0) continue;
    // A longer prefix kept in host memory (--cache-ram) is imported whole,
    // then cut back: only if its pages can be had now.
    HostPromptCache::Match ram;
    if (t.params.cache_prompt) ram = host_cache_.find(t.prompt, std::max(place.keep, place.shared));
    if (ram.entry && cache_.unified() && !prompt_fits(t, Placement{place.slot}, (int)ram.entry->tokens.size()))
      ram = {};
    if (cache_.unified() && !ram.entry && !prompt_fits(t, place)) return false;  // waits; so do the ones behind it
    a.task = std::move(it->first);
    a.queued_at = it->second;
    a.place = place;
    a.ram = std::move(ram);
    queue_.erase(it);
    stats_.queue_depth = (int)queue_.size();
    return true;
  }
  return false;
}

void Scheduler::start_task(Assignment& a) {
  const Placement& place = a.place;
  const HostPromptCache::Match& ram = a.ram;
  Slot& s = *slots_[(size_t)place.slot];
  // The slot's conversation, unless the new prompt continues it, goes to
  // host memory before it is cut back or replaced.
  if (s.cached.size() > (ram.entry || place.donor >= 0 ? 0 : place.keep)) host_cache_.save(cache_, s.id, s.cached);
  s.task = std::move(a.task);
  s.t_queued = a.queued_at;
  s.active = true;
  s.last_used = ++clock_;
  s.t_start = Clock::now();
  size_t keep = s.task.params.cache_prompt ? place.keep : 0;
  // A sliding-window layer may have overwritten rows the kept prefix needs;
  // the cache then keeps less (or nothing), and so must we.
  keep = (size_t)cache_.truncate(s.id, (int)keep);
  s.cached.resize(keep);
  if (place.donor >= 0 && !ram.entry) keep = share_prefix(s, *slots_[(size_t)place.donor], place.shared);
  if (ram.entry) keep = load_from_host(s, ram);
  // The prompt's pages now (and the first generated token's), so that its
  // chunks never wait for room; prompt_fits() said they can be had.
  if (cache_.unified())
    reserve_dropping_idle(s.id, (int)std::min(s.task.prompt.size() + 1, (size_t)cfg_.n_ctx_slot), s.id);
  s.n_past = keep;
  s.n_cached_at_start = (int)keep;
  s.generating = false;
  s.pending = -1;
  s.n_gen = 0;
  s.replay.clear();
  s.n_replayed = 0;
  s.shifted = false;
  const auto& grammar = s.task.params.sampling.grammar;
  s.sampler = std::make_unique<sampling::Sampler>(s.task.params.sampling, grammar ? grammar_vocab() : nullptr,
                                                  grammar ? grammar_masks_.for_grammar(grammar) : nullptr);
  s.detok = std::make_unique<tok::StreamDetokenizer>(tok_);
  // Generated text continues the prompt: prime the detokenizer with the
  // prompt's last visible token so the first generated piece keeps its
  // leading space (only text at the very start loses the dummy prefix).
  for (auto r = s.task.prompt.rbegin(); r != s.task.prompt.rend(); ++r)
    if (!tok_.token_to_piece(*r).empty()) {
      s.detok->push(*r);
      s.detok->finish();
      break;
    }
  s.stop = std::make_unique<StopMatcher>(s.task.params.stop);
  s.out.clear();
  for (int32_t tok : s.task.prompt) s.sampler->accept(tok);
  report_progress(s, s.t_start);  // the first (0%) report tells a client its prompt has started
}

std::shared_ptr<const grammar::TokenTrie> Scheduler::grammar_vocab() {
  if (!grammar_vocab_) grammar_vocab_ = grammar::make_token_trie(tok_);
  return grammar_vocab_;
}

Scheduler::StepBatch Scheduler::build_batch() {
  StepBatch b;
  for (auto& s : slots_) {
    if (!s->active || !s->generating || s->replaying()) continue;
    b.tokens.push_back({s->pending, (int32_t)s->id, (int32_t)s->cached.size(), true});
    b.rows.push_back(s.get());
  }
  // The rest of the budget goes to prompts (and tokens replayed after a
  // context shift), oldest assignment first.
  std::vector<Slot*> prompting;
  for (auto& s : slots_)
    if (s->active && (!s->generating || s->replaying())) prompting.push_back(s.get());
  std::sort(prompting.begin(), prompting.end(), [](Slot* a, Slot* c) { return a->last_used < c->last_used; });
  int budget = cfg_.n_ubatch - (int)b.tokens.size();
  for (Slot* s : prompting) {
    if (budget <= 0) break;
    // A replay continues a generation; a prompt is the task's (and reports progress).
    const bool replay = s->replaying();
    const std::vector<int32_t>& src = replay ? s->replay : s->task.prompt;
    const size_t done = replay ? s->n_replayed : s->n_past;
    if (!replay) b.fed.push_back(s);
    const size_t n = std::min(src.size() - done, (size_t)budget);
    for (size_t i = 0; i < n; ++i) {
      const bool last = done + i + 1 == src.size();
      b.tokens.push_back({src[done + i], (int32_t)s->id, (int32_t)(s->cached.size() + i), last});
      if (last) b.rows.push_back(s);
    }
    budget -= (int)n;
    b.has_prompt = true;
  }
  return b;
}

void Scheduler::fail_batch(const StepBatch& b, const std::exception& e) {
  // The cache is untouched by a failed eval; every slot in the batch ends
  // with the error so no client waits forever.
  log_.error(std::string("forward pass failed: ") + e.what());
  std::vector<bool> in_batch(slots_.size(), false);
  for (const auto& t : b.tokens) in_batch[(size_t)t.seq] = true;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!in_batch[i]) continue;
    Slot& s = *slots_[i];
    Event ev;
    ev.slot = s.id;
    ev.done = Done{FinishReason::Error, "", false, "", e.what(), {}, s.id};
    s.task.channel->push(std::move(ev));
    s.active = false;
    s.generating = false;
  }
}

size_t Scheduler::commit_batch(const StepBatch& b) {
  size_t n_prompt_tokens = 0;
  for (const auto& t : b.tokens) {
    Slot& s = *slots_[(size_t)t.seq];
    s.cached.push_back(t.token);
    if (!s.generating) ++s.n_past, ++n_prompt_tokens;
    else if (s.replaying() && ++s.n_replayed == s.replay.size()) s.replay.clear(), s.n_replayed = 0;
  }
  return n_prompt_tokens;
}

void Scheduler::send_outputs(Clock::time_point now) {
  for (auto& s : slots_) {
    if (s->out.empty()) continue;
    Event e;
    e.slot = s->id;
    e.tokens = std::move(s->out);
    s->out.clear();
    if (s->task.params.timings_per_token) e.timings = timings_of(*s, true, now);
    s->task.channel->push(std::move(e));
  }
}

bool Scheduler::step() {
  // n_predict == 0 answers at once, without evaluating the prompt.
  for (auto& s : slots_)
    if (s->active && !s->generating && s->task.params.n_predict == 0) {
      s->t_first = Clock::now();
      finish(*s, FinishReason::Length);
    }
  if (cache_.unified()) grow_or_stop_generations();

  const StepBatch b = build_batch();
  if (b.tokens.empty()) return false;
  // Logits rows come back in batch order, which is the order of b.rows.
  const auto t0 = Clock::now();
  const std::vector<float>* logits = nullptr;
  try {
    logits = &fwd_.eval(b.tokens);
  } catch (const std::exception& e) {
    fail_batch(b, e);
    return true;
  }
  const double step_s = ms_between(t0, Clock::now()) / 1000.0;
  const size_t n_prompt_tokens = commit_batch(b);

  // Progress first: a prompt that completes here may finish its task in on_logits.
  const auto t_end = Clock::now();
  for (Slot* s : b.fed) report_progress(*s, t_end);
  const int n_vocab = fwd_.n_vocab();
  for (size_t r = 0; r < b.rows.size(); ++r) on_logits(*b.rows[r], logits->data() + r * (size_t)n_vocab);
  {
    std::lock_guard<std::mutex> l(m_);
    stats_.n_decode_total++;
    stats_.prompt_tokens_total += n_prompt_tokens;
    if (b.has_prompt) stats_.prompt_seconds_total += step_s;
    else stats_.predicted_seconds_total += step_s;
  }
  send_outputs(t_end);
  return true;
}

void Scheduler::on_logits(Slot& s, const float* logits) {
  const int n_vocab = fwd_.n_vocab();
  if (!s.generating) {
    s.generating = true;
    s.t_first = Clock::now();
  }
  const GenParams& p = s.task.params;
  // Post-sampling probabilities are read from the sampler's candidates, so it must run.
  const int32_t t = plain_greedy(p.sampling) && !p.post_sampling_probs ? argmax(logits, n_vocab)
                                                                        : s.sampler->sample(logits, n_vocab);
  s.sampler->accept(t);
  ++s.n_gen;
  {
    std::lock_guard<std::mutex> l(m_);
    stats_.predicted_tokens_total++;
  }
  TokenOut out;
  out.token = t;
  if (p.logprobs || p.n_probs > 0) {
    const LogProbs lp = p.post_sampling_probs ? post_sampling_logprobs(s.sampler->last_candidates(), t, p.n_probs)
                                              : compute_logprobs(logits, n_vocab, t, p.n_probs);
    out.prob = TokenProb{t, tok_.token_to_piece(t), lp.token_logprob};
    for (const auto& [id, v] : lp.top) out.top.push_back({id, tok_.token_to_piece(id), v});
  }
  const bool eog = tok_.vocab().is_eog(t) && !p.ignore_eos;
  if (!eog) out.text = s.stop->push(s.detok->push(t));
  s.out.push_back(std::move(out));

  if (eog) {
    finish(s, FinishReason::Stop);
  } else if (s.stop->stopped()) {
    finish(s, FinishReason::Stop);
  } else if (p.n_predict >= 0 && s.n_gen >= p.n_predict) {
    finish(s, FinishReason::Length);
  } else {
    s.pending = t;
    if ((int)s.cached.size() >= cfg_.n_ctx_slot && !(cfg_.context_shift && shift_context(s)))
      finish(s, FinishReason::Length);
  }
}

void Scheduler::finish(Slot& s, FinishReason reason) {
  const auto now = Clock::now();
  Done d;
  d.reason = reason;
  d.slot = s.id;
  if (s.stop->stopped()) d.stop_word = s.stop->matched();
  else if (reason == FinishReason::Stop) d.stopped_eos = true;
  if (reason != FinishReason::Cancelled && !s.stop->stopped()) {
    d.tail = s.stop->push(s.detok->finish());
    d.tail += s.stop->flush();
  }
  d.timings = timings_of(s, s.generating || reason == FinishReason::Length, now);
  // As llama-server: a generation that ran out of context says so.
  d.truncated = s.shifted || (reason == FinishReason::Length && (int)s.cached.size() >= cfg_.n_ctx_slot);
  Event e;
  e.slot = s.id;
  e.tokens = std::move(s.out);
  s.out.clear();
  if (s.task.params.timings_per_token) e.timings = d.timings;
  e.done = std::move(d);
  s.active = false;
  s.generating = false;
  // Positions past what the cache holds (a prompt cut short by cancellation)
  // are already consistent: `cached` is only extended after evaluation.
  {
    std::lock_guard<std::mutex> l(m_);
    stats_.requests_total++;
    if (reason == FinishReason::Cancelled) stats_.requests_cancelled++;
  }
  // /slots, /props and /metrics show the finished slot before its client
  // hears the end: a request made right after the answer sees it idle.
  publish();
  s.task.channel->push(std::move(e));
}

Timings Scheduler::timings_of(const Slot& s, bool started, Clock::time_point now) const {
  Timings t;
  t.n_prompt = (int)s.task.prompt.size();
  t.n_cached = s.n_cached_at_start;
  t.n_predicted = s.n_gen;
  t.prompt_ms = started ? ms_between(s.t_start, s.t_first) : ms_between(s.t_start, now);
  t.predicted_ms = started ? ms_between(s.t_first, now) : 0;
  t.queue_ms = ms_between(s.t_queued, s.t_start);
  return t;
}

void Scheduler::report_progress(Slot& s, Clock::time_point now) {
  if (!s.task.params.return_progress) return;
  Event e;
  e.slot = s.id;
  e.progress = PromptProgress{(int)s.task.prompt.size(), s.n_cached_at_start, (int)s.n_past,
                              ms_between(s.t_start, now)};
  s.task.channel->push(std::move(e));
}

void Scheduler::publish() {
  std::vector<SlotInfo> info;
  kv::KvCache::Usage total;
  double values = 0;  // K and V values cached, to average bits per value over slots
  for (const auto& s : slots_) {
    info.push_back({s->id, s->active, cfg_.n_ctx_slot, (int)s->cached.size(), (int)s->task.prompt.size(), s->n_gen,
                    cache_.pages().pages_held(s->id) * cache_.pages().page_positions(), {}});
    const kv::KvCache::Usage u = cache_.usage(s->id);
    info.back().kv = u;
    total.sink_cells += u.sink_cells;
    total.main_cells += u.main_cells;
    total.recent_cells += u.recent_cells;
    total.bytes += u.bytes;
    total.main_bits_per_value = u.main_bits_per_value;
    if (u.bits_per_value > 0) values += u.bytes * 8.0 / u.bits_per_value;
  }
  total.bits_per_value = values > 0 ? total.bytes * 8.0 / values : 0;
  total.bytes -= std::min(total.bytes, cache_.shared_bytes());  // a shared page is stored once
  std::lock_guard<std::mutex> l(m_);
  slot_info_ = std::move(info);
  stats_.kv = total;
  stats_.kv_bytes_allocated = cache_.bytes_allocated();
  stats_.kv_unified = cache_.unified();
  stats_.kv_slots_dropped = slots_dropped_;
  stats_.kv_pool_positions = cache_.pool_positions();
  stats_.kv_pool_used_positions = cache_.pool_positions() - cache_.free_positions();  // a shared page counts once
  stats_.kv_pool_shared_positions = cache_.pages().shared_pages() * cache_.pages().page_positions();
  stats_.kv_prefixes_shared = prefixes_shared_;
  stats_.context_shifts = context_shifts_;
  stats_.sleeping = sleeping_;
  stats_.sleeps = sleeps_;
  stats_.host_cache = host_cache_.stats();
  if (!cache_.unified()) {  // every slot owns its pages: count the positions held
    stats_.kv_pool_used_positions = 0;
    for (const auto& s : slots_) stats_.kv_pool_used_positions += cache_.n_pos(s->id);
  }
  count_occupancy();
}

void Scheduler::publish_occupancy() {
  std::lock_guard<std::mutex> l(m_);
  count_occupancy();
}

void Scheduler::count_occupancy() {
  stats_.processing = 0;
  for (const auto& s : slots_) stats_.processing += s->active ? 1 : 0;
  stats_.queue_depth = (int)queue_.size();
}

}  // namespace oscar::server
