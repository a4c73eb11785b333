#include "server/responses_routes.h"

#include <httplib.h>

#include <ctime>

#include "server/chat_prompt.h"
#include "server/http_util.h"
#include "server/responses_request.h"
#include "server/responses_shaper.h"
#include "server/server_context.h"
#include "server/task_relay.h"

namespace oscar::server {

void register_responses_routes(httplib::Server& svr, ServerContext& ctx) {
  auto create = [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      ResponsesRequest rr = parse_responses_request(body, ctx.defaults(), new_request_seed());
      const ChatPrompt p = build_chat_prompt(ctx, rr.chat);
      ctx.check_prompt_fits(p.tokens.size());
      Task task;
      task.prompt = p.tokens;
      task.params = rr.params;
      ResponsesShaperInfo info{new_response_id("resp_"), ctx.alias(), std::time(nullptr), (int)p.tokens.size(),
                               rr.echo};
      relay_task(ctx, req, res, std::move(task), make_responses_shaper(info, p.format, p.text), rr.stream);
    });
  };
  svr.Post("/v1/responses", create);
  svr.Post("/responses", create);
  // Stored responses are what these would read; none are kept.
  auto stateless = [](const httplib::Request&, httplib::Response& res) {
    reply_error(res, ApiError(404, "this server stores no responses (requests are stateless)", "not_found_error"));
  };
  svr.Get(R"(/v1/responses/([^/]+))", stateless);
  svr.Delete(R"(/v1/responses/([^/]+))", stateless);
}

}  // namespace oscar::server
