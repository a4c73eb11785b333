#include "server/anthropic_routes.h"

#include <httplib.h>

#include <ctime>

#include "server/anthropic_error.h"
#include "server/anthropic_request.h"
#include "server/anthropic_shaper.h"
#include "server/chat_prompt.h"
#include "server/http_util.h"
#include "server/server_context.h"
#include "server/task_relay.h"

namespace oscar::server {

namespace {

using httplib::Request;
using httplib::Response;

// Like guarded(), with Anthropic's error body instead of OpenAI's.
template <class F>
void anthropic_guarded(Response& res, F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    reply_json(res, anthropic_error_body(e.status(), e.what()), e.status());
  }
}

void check_version_header(const Request& req) {
  // Every published version speaks the shape served here; only a malformed one is refused.
  const std::string v = req.get_header_value("anthropic-version");
  if (!v.empty() && (v.size() != 10 || v[4] != '-' || v[7] != '-'))
    throw bad_request("anthropic-version header: expected a date like 2023-06-01, got '" + v + "'");
}

}  // namespace

void register_anthropic_routes(httplib::Server& svr, ServerContext& ctx) {
  svr.Post("/v1/messages", [&ctx](const Request& req, Response& res) {
    anthropic_guarded(res, [&] {
      check_version_header(req);
      const Json body = parse_body(req.body);
      AnthropicRequest ar = parse_anthropic_request(body, ctx.defaults(), new_request_seed());
      const ChatPrompt p = build_chat_prompt(ctx, ar.chat);
      ctx.check_prompt_fits(p.tokens.size());
      Task task;
      task.prompt = p.tokens;
      task.params = ar.params;
      AnthropicShaperInfo info{new_response_id("msg_"), ctx.alias(), (int)p.tokens.size()};
      relay_task(ctx, req, res, std::move(task), make_anthropic_shaper(info, p.format, p.text), ar.stream);
    });
  });

  svr.Post("/v1/messages/count_tokens", [&ctx](const Request& req, Response& res) {
    anthropic_guarded(res, [&] {
      check_version_header(req);
      const Json body = parse_body(req.body);
      const AnthropicRequest ar = parse_anthropic_request(body, ctx.defaults(), 0, /*count_only=*/true);
      reply_json(res, {{"input_tokens", build_chat_prompt(ctx, ar.chat).tokens.size()}});
    });
  });
}

}  // namespace oscar::server
