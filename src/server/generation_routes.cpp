// The generation endpoints and the loop that relays a task's events to the
// client, streamed (SSE) or whole, cancelling the task as soon as the
// client is gone.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <random>

#include "server/connection_probe.h"
#include "server/http_util.h"
#include "server/response_shaper.h"
#include "server/routes.h"
#include "server/server_context.h"
#include "server/sse.h"
#include "server/task_relay.h"

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

// Keeps ctx.in_flight up while a generation is being served (shutdown waits on it).
struct InFlight {
  explicit InFlight(ServerContext& c) : ctx(c) { ctx.in_flight++; }
  ~InFlight() { ctx.in_flight--; }
  ServerContext& ctx;
};

struct StreamState {
  std::shared_ptr<Channel> channel;
  std::unique_ptr<ResponseShaper> shaper;
  ConnectionProbe probe;
  std::unique_ptr<InFlight> in_flight;
  bool finished = false;
};

void serve_task(ServerContext& ctx, const Request& req, Response& res, Task task,
                std::unique_ptr<ResponseShaper> shaper, bool stream) {
  if (ctx.draining()) throw ApiError(503, "the server is shutting down", "unavailable_error");
  auto channel = std::make_shared<Channel>();
  task.channel = channel;
  auto in_flight = std::make_unique<InFlight>(ctx);
  ctx.model().scheduler->submit(std::move(task));
  ctx.counters.generations++;
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
        if (e.done->reason == FinishReason::Error)
          throw ApiError(500, "generation failed: " + e.done->error, "server_error");
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
          if (e.done && e.done->reason == FinishReason::Error) {
            out = st->shaper->frame_error(500, "generation failed: " + e.done->error);
          } else {
            for (const Json& c : st->shaper->chunks(e)) out += st->shaper->frame(c);
          }
          if (e.done && st->shaper->done_marker()) out += sse_done();
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            st->channel->cancel();
            return false;
          }
          if (e.done) {
            st->finished = true;
            st->in_flight.reset();
            sink.done();
            return true;
          }
        }
        return true;
      },
      [st](bool) {
        // Whatever ended the response (done, write error, shutdown), the slot must not keep going.
        if (!st->finished) st->channel->cancel();
        st->in_flight.reset();
      });
}

}  // namespace

void relay_task(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, Task task,
                std::unique_ptr<ResponseShaper> shaper, bool stream) {
  serve_task(ctx, req, res, std::move(task), std::move(shaper), stream);
}
std::string new_response_id(const char* prefix) { return random_id(prefix); }
uint64_t new_request_seed() { return random_seed(); }

void register_generation_routes(httplib::Server& svr, ServerContext& ctx) {
  auto chat = [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const ChatRequest cr = parse_chat_request(body);
      const StreamOptions so = parse_stream_options(body);
      Task task;
      task.params = parse_gen_params(body, ctx.defaults(), Api::Chat, random_seed());
      const std::string prompt = ctx.render_chat(cr);
      // The rendered text carries BOS itself when the template adds it;
      // a model that wants BOS gets one when the template did not write it
      // (e.g. the ChatML fallback), never two.
      task.prompt = ctx.tokenize_prompt(prompt, /*add_special=*/false);
      const tok::Vocab& vocab = ctx.model().tokenizer->vocab();
      if (vocab.add_bos() && vocab.bos() != tok::kNoToken && task.prompt.front() != vocab.bos())
        task.prompt.insert(task.prompt.begin(), vocab.bos());
      ctx.check_prompt_fits(task.prompt.size());
      chat::ChatOutputFormat fmt = ctx.model().output_format;
      // A request may choose its own reasoning format, as llama-server allows.
      const std::string reasoning = get_string(body, "reasoning_format", ctx.settings().reasoning_format);
      if (reasoning != "none" && reasoning != "deepseek" && reasoning != "auto")
        throw bad_request("'reasoning_format' must be none, deepseek or auto");
      if (reasoning == "none") fmt.reasoning.reset();
      if (!cr.parse_tool_calls) fmt.tools.reset();
      ShaperInfo info{random_id("chatcmpl-"), ctx.alias(), std::time(nullptr), so.include_usage,
                      task.params.logprobs, task.params.n_probs};
      serve_task(ctx, req, res, std::move(task), make_chat_shaper(info, fmt, prompt), so.stream);
    });
  };
  svr.Post("/v1/chat/completions", chat);
  svr.Post("/chat/completions", chat);

  auto completions = [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const StreamOptions so = parse_stream_options(body);
      Task task;
      task.params = parse_gen_params(body, ctx.defaults(), Api::Completions, random_seed());
      const PromptInput in = parse_prompt(body, ctx.model().n_vocab);
      task.prompt = in.is_tokens ? in.tokens : ctx.tokenize_prompt(in.text, /*add_special=*/true);
      if (task.prompt.empty()) throw bad_request("the prompt is empty");
      ctx.check_prompt_fits(task.prompt.size());
      ShaperInfo info{random_id("cmpl-"), ctx.alias(), std::time(nullptr), so.include_usage, task.params.logprobs,
                      task.params.n_probs};
      serve_task(ctx, req, res, std::move(task), make_completions_shaper(info), so.stream);
    });
  };
  svr.Post("/v1/completions", completions);
  svr.Post("/completions", completions);

  auto native = [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const bool stream = get_bool(body, "stream", false);
      Task task;
      task.params = parse_gen_params(body, ctx.defaults(), Api::Native, random_seed());
      if (body.contains("id_slot") && !body["id_slot"].is_null()) {
        if (!body["id_slot"].is_number_integer()) throw bad_request("'id_slot' must be an integer");
        const long long id = body["id_slot"].get<long long>();
        if (id >= ctx.model().scheduler->config().n_slots || id < -1)
          throw bad_request("'id_slot' must be -1 or a slot id below " +
                            std::to_string(ctx.model().scheduler->config().n_slots));
        task.id_slot = (int)id;
      }
      const PromptInput in = parse_prompt(body, ctx.model().n_vocab);
      task.prompt = in.is_tokens ? in.tokens : ctx.tokenize_prompt(in.text, /*add_special=*/true);
      if (task.prompt.empty()) throw bad_request("the prompt is empty");
      ctx.check_prompt_fits(task.prompt.size());
      ShaperInfo info{random_id("cmpl-"), ctx.alias(), std::time(nullptr), false, task.params.logprobs,
                      task.params.n_probs};
      Json settings = ctx.generation_settings(task.params);
      serve_task(ctx, req, res, std::move(task), make_native_shaper(info, settings), stream);
    });
  };
  svr.Post("/completion", native);
}

}  // namespace oscar::server
