// The generation endpoints and the loop that relays a task's events to the
// client, streamed (SSE) or whole, cancelling the task as soon as the
// client is gone.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <random>

#include "server/build_info.h"
#include "server/chat_continuation.h"
#include "server/connection_probe.h"
#include "server/grammar_request.h"
#include "server/tool_grammar.h"
#include "server/http_util.h"
#include "server/response_shaper.h"
#include "server/routes.h"
#include "server/server_context.h"
#include "server/sse.h"
#include "server/task_relay.h"
#include "server/verbose_shaper.h"

namespace oscar::server {

namespace {

using httplib::Request;
using httplib::Response;
using namespace std::chrono_literals;

constexpr auto kPoll = 50ms;  // how often a waiting handler checks its client

std::string random_id(const char* prefix) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device rd;
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlnum[rd() % (sizeof kAlnum - 1)];
  return id;
}

uint64_t random_seed() {
  std::random_device rd;
  return ((uint64_t)rd() << 32) ^ rd();
}

// Keeps ctx.in_flight up while a generation is being served (shutdown waits
// on it), and counts how an accepted one ended, exactly once: as its Done
// says, or cancelled when it ends without one (client gone, write failed).
struct InFlight {
  explicit InFlight(ServerContext& c) : ctx(c) { ctx.in_flight++; }
  ~InFlight() {
    if (accepted) {
      auto& c = ctx.counters;
      (reason == FinishReason::Error       ? c.generations_failed
       : reason == FinishReason::Cancelled ? c.generations_cancelled
                                           : c.generations_finished)++;
    }
    ctx.in_flight--;
  }
  void accept() {
    accepted = true;
    ctx.counters.generations++;
  }
  ServerContext& ctx;
  bool accepted = false;
  FinishReason reason = FinishReason::Cancelled;
};

struct StreamState {
  std::shared_ptr<Channel> channel;
  std::unique_ptr<ResponseShaper> shaper;
  ConnectionProbe probe;
  std::unique_ptr<InFlight> in_flight;
  bool finished = false;
};

// Runs a request's tasks (one, or one per prompt and choice) and relays
// their events through `shaper`, whole or streamed. Every task reports to
// one shared channel, so a client that goes away cancels them all.
void serve_tasks(ServerContext& ctx, const Request& req, Response& res, std::vector<Task> tasks,
                 std::unique_ptr<ResponseShaper> shaper, bool stream) {
  if (ctx.draining()) throw ApiError(503, "the server is shutting down", "unavailable_error");
  auto channel = std::make_shared<Channel>();
  auto in_flight = std::make_unique<InFlight>(ctx);
  try {
    for (Task& task : tasks) {
      task.channel = tasks.size() == 1 ? channel : std::make_shared<Channel>(channel, task.index);
      ctx.model().scheduler->submit(std::move(task));
    }
  } catch (...) {
    channel->cancel();  // the tasks already queued must not run for nobody
    throw;
  }
  in_flight->accept();  // counted once per request, however many tasks it has
  const ConnectionProbe probe =
      ConnectionProbe::find(req.local_addr, req.local_port, req.remote_addr, req.remote_port);

  if (!stream) {
    for (;;) {
      const auto events = channel->wait(kPoll);
      // Checked whether or not tokens arrived: a busy generation must notice too.
      if (probe.closed()) {
        channel->cancel();
        res.status = 499;  // nobody reads it; keeps the log honest
        return;
      }
      for (const auto& e : events) {
        shaper->chunks(e);
        if (!e.done) continue;
        if (e.done->reason == FinishReason::Error) {
          in_flight->reason = e.done->reason;
          channel->cancel();
          throw ApiError(500, "generation failed: " + e.done->error, "server_error");
        }
        if (e.done->reason == FinishReason::Cancelled) {  // the client is here, so the server cut it
          in_flight->reason = e.done->reason;
          channel->cancel();
          throw ApiError(503, "the server is shutting down: the generation was stopped", "unavailable_error");
        }
        if (!shaper->complete()) continue;
        in_flight->reason = e.done->reason;
        reply_json(res, shaper->response());
        return;
      }
    }
  }

  auto st = std::make_shared<StreamState>();
  st->channel = channel;
  st->shaper = std::move(shaper);
  st->probe = probe;
  st->in_flight = std::move(in_flight);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](size_t, httplib::DataSink& sink) -> bool {
        const auto events = st->channel->wait(kPoll);
        // Writes fail once the peer is gone, but only after it answers one
        // with a reset; the probe catches a close before that.
        if (st->probe.closed()) {
          st->channel->cancel();
          return false;
        }
        if (events.empty()) return true;
        for (const auto& e : events) {
          std::string out;
          const bool failed = e.done && e.done->reason == FinishReason::Error;
          if (failed) {
            st->channel->cancel();
            out = st->shaper->frame_error(500, "generation failed: " + e.done->error);
          } else {
            for (const Json& c : st->shaper->chunks(e)) out += st->shaper->frame(c);
            // Cut by a shutdown: finish_reason "cancelled", then an error event.
            if (e.done && e.done->reason == FinishReason::Cancelled)
              out += st->shaper->frame_error(503, "the server is shutting down: the generation was stopped");
          }
          const bool last = failed || (e.done && st->shaper->complete());
          if (last && st->shaper->done_marker()) out += sse_done();
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            st->channel->cancel();
            return false;
          }
          if (last) {
            st->finished = true;
            st->in_flight->reason = e.done->reason;
            st->in_flight.reset();
            sink.done();
            return true;
          }
        }
        return true;
      },
      [st](bool) {
        // Whatever ended the response (done, write error, shutdown), the slots must not keep going.
        if (!st->finished) st->channel->cancel();
        st->in_flight.reset();
      });
}

VocabAccess vocab_access(const ServerContext& ctx) {
  const tok::Tokenizer* t = ctx.model().tokenizer;
  return {ctx.model().n_vocab, [t](const std::string& text) { return t->tokenize(text, false, true); }};
}

// One prompt's tokens: its pieces in order; only a leading text piece may
// get a BOS (llama-server's rule).
std::vector<int32_t> tokenize_spec(const ServerContext& ctx, const PromptSpec& spec) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < spec.size(); ++i) {
    const PromptPiece& p = spec[i];
    std::vector<int32_t> ids = !p.is_text ? p.tokens
                               : i == 0   ? ctx.tokenize_prompt(p.text, /*add_special=*/true)
                                          : ctx.model().tokenizer->tokenize(p.text, false, true);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  if (out.empty()) throw bad_request("the prompt is empty");
  ctx.check_prompt_fits(out.size());
  return out;
}

// The tasks of one request: each prompt `n` times; choice j of a prompt
// samples with seed + j, so choices differ yet a request is reproducible.
std::vector<Task> make_tasks(const std::vector<std::vector<int32_t>>& prompts, const GenParams& params, int n,
                             int id_slot) {
  std::vector<Task> tasks;
  for (size_t p = 0; p < prompts.size(); ++p)
    for (int j = 0; j < n; ++j) {
      Task t;
      t.prompt = prompts[p];
      t.params = params;
      t.params.sampling.seed += (uint64_t)j;
      t.id_slot = id_slot;
      t.index = (int)tasks.size();
      tasks.push_back(std::move(t));
    }
  return tasks;
}

ShaperInfo shaper_info(const ServerContext& ctx, const char* id_prefix, const GenParams& p, bool include_usage) {
  ShaperInfo info;
  info.id = random_id(id_prefix);
  info.model = ctx.alias();
  info.created = std::time(nullptr);
  info.include_usage = include_usage;
  info.logprobs = p.logprobs;
  info.n_probs = p.n_probs;
  info.post_sampling_probs = p.post_sampling_probs;
  info.fingerprint = build_id();
  return info;
}

// With -v, an OpenAI-shaped answer also carries the native one as
// "__verbose" (verbose_shaper.h), as llama-server's does.
std::unique_ptr<ResponseShaper> maybe_verbose(const ServerContext& ctx, std::unique_ptr<ResponseShaper> shown,
                                              ShaperInfo info, const Task& t) {
  if (!ctx.settings().verbose) return shown;
  info.include_usage = false;
  info.prompt_text = ctx.model().tokenizer->detokenize(t.prompt, false, /*render_special=*/true);
  info.n_prompt = (int)t.prompt.size();
  return with_verbose(std::move(shown), make_native_shaper(info, ctx.generation_settings(t.params)));
}

// One shaper per task, merged when there are several.
template <class MakeOne>
std::unique_ptr<ResponseShaper> shaper_for(const std::vector<Task>& tasks, MergeKind kind, bool include_usage, int n,
                                           MakeOne make_one) {
  if (tasks.size() == 1) return make_one(tasks[0], include_usage);
  std::vector<std::unique_ptr<ResponseShaper>> each;
  for (const Task& t : tasks) each.push_back(make_one(t, false));
  return make_multi_shaper(std::move(each), kind, include_usage, n);
}

}  // namespace

void relay_task(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, Task task,
                std::unique_ptr<ResponseShaper> shaper, bool stream) {
  std::vector<Task> tasks;
  tasks.push_back(std::move(task));
  serve_tasks(ctx, req, res, std::move(tasks), std::move(shaper), stream);
}
std::string new_response_id(const char* prefix) { return random_id(prefix); }
uint64_t new_request_seed() { return random_seed(); }

void register_generation_routes(httplib::Server& svr, ServerContext& ctx) {
  auto chat = [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const ChatRequest cr = parse_chat_request(body);
      const StreamOptions so = parse_stream_options(body);
      const int n_slots = ctx.model().scheduler->config().n_slots;
      GenParams params = parse_gen_params(body, ctx.defaults(), Api::Chat, random_seed(), vocab_access(ctx));
      if (auto g = parse_grammar_request(body, Api::Chat, ctx.grammar_cache)) params.sampling.grammar = g;
      const int n = parse_n_choices(body, n_slots);
      const int id_slot = parse_id_slot(body, n_slots);
      const std::string prompt = chat_prompt(cr, [&](const ChatRequest& r) { return ctx.render_chat(r); });
      // The rendered text carries BOS itself when the template adds it;
      // a model that wants BOS gets one when the template did not write it
      // (e.g. the ChatML fallback), never two.
      std::vector<int32_t> tokens = ctx.tokenize_prompt(prompt, /*add_special=*/false);
      const tok::Vocab& vocab = ctx.model().tokenizer->vocab();
      if (vocab.add_bos() && vocab.bos() != tok::kNoToken && tokens.front() != vocab.bos())
        tokens.insert(tokens.begin(), vocab.bos());
      ctx.check_prompt_fits(tokens.size());
      chat::ChatOutputFormat fmt = ctx.model().output_format;
      // A request may choose its own reasoning format, as llama-server allows.
      const std::string reasoning = get_string(body, "reasoning_format", ctx.settings().reasoning_format);
      if (reasoning != "none" && reasoning != "deepseek" && reasoning != "auto")
        throw bad_request("'reasoning_format' must be none, deepseek or auto");
      if (reasoning == "none") fmt.reasoning.reset();
      if (!cr.parse_tool_calls) fmt.tools.reset();
      if (auto g = tool_call_grammar(body, fmt, prompt, ctx.grammar_cache)) {
        if (params.sampling.grammar && body.contains("response_format"))
          throw bad_request("a forced tool call ('tool_choice') cannot be combined with 'response_format'");
        params.sampling.grammar = g;
      }
      std::vector<Task> tasks = make_tasks({tokens}, params, n, id_slot);
      ShaperInfo info = shaper_info(ctx, "chatcmpl-", params, so.include_usage);
      auto shaper = shaper_for(tasks, MergeKind::OpenAiChoices, so.include_usage, n, [&](const Task& t, bool usage) {
        ShaperInfo i = info;
        i.index = t.index;
        i.include_usage = usage;
        return maybe_verbose(ctx, make_chat_shaper(i, fmt, prompt), i, t);
      });
      serve_tasks(ctx, req, res, std::move(tasks), std::move(shaper), so.stream);
    });
  };
  svr.Post("/v1/chat/completions", chat);
  svr.Post("/chat/completions", chat);

  // /v1/completions (OpenAI's shape) and /completion, /completions (llama.cpp's native one).
  auto completions = [&ctx](bool native) {
    return [&ctx, native](const Request& req, Response& res) {
      guarded(res, [&] {
        const Json body = parse_body(req.body);
        const StreamOptions so = parse_stream_options(body);
        const int n_slots = ctx.model().scheduler->config().n_slots;
        const Api api = native ? Api::Native : Api::Completions;
        GenParams params = parse_gen_params(body, ctx.defaults(), api, random_seed(), vocab_access(ctx));
        if (auto g = parse_grammar_request(body, api, ctx.grammar_cache)) params.sampling.grammar = g;
        const int n = parse_n_choices(body, n_slots);
        const int id_slot = parse_id_slot(body, n_slots);
        const std::vector<std::string> fields = native ? parse_response_fields(body) : std::vector<std::string>{};
        const bool return_tokens = native && get_bool(body, "return_tokens", false);
        std::vector<std::vector<int32_t>> prompts;
        for (const PromptSpec& spec : parse_prompts(body, ctx.model().n_vocab))
          prompts.push_back(tokenize_spec(ctx, spec));
        std::vector<Task> tasks = make_tasks(prompts, params, n, id_slot);
        const ShaperInfo info = shaper_info(ctx, "cmpl-", params, so.include_usage && !native);
        const tok::Tokenizer& tk = *ctx.model().tokenizer;
        auto make_one = [&](const Task& t, bool usage) {
          ShaperInfo i = info;
          i.index = t.index;
          i.include_usage = usage;
          if (!native) return maybe_verbose(ctx, make_completions_shaper(i), i, t);
          i.response_fields = fields;
          i.return_tokens = return_tokens;
          i.prompt_text = tk.detokenize(t.prompt, false, /*render_special=*/true);
          i.n_prompt = (int)t.prompt.size();
          return make_native_shaper(i, ctx.generation_settings(t.params));  // the choice's own seed
        };
        auto shaper = shaper_for(tasks, native ? MergeKind::NativeArray : MergeKind::OpenAiChoices,
                                 info.include_usage, n, make_one);
        serve_tasks(ctx, req, res, std::move(tasks), std::move(shaper), so.stream);
      });
    };
  };
  svr.Post("/v1/completions", completions(false));
  // As llama-server: /completions without /v1 is the native endpoint.
  svr.Post("/completions", completions(true));
  svr.Post("/completion", completions(true));
}

}  // namespace oscar::server
