#include "server/infill_routes.h"

#include <httplib.h>

#include <ctime>

#include "server/http_util.h"
#include "server/infill_prompt.h"
#include "server/server_context.h"
#include "server/task_relay.h"

namespace oscar::server {

void register_infill_routes(httplib::Server& svr, ServerContext& ctx) {
  svr.Post("/infill", [&ctx](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      const tok::Tokenizer& tokenizer = *ctx.model().tokenizer;
      check_fim_support(tokenizer.vocab());
      const Json body = parse_body(req.body);
      Task task;
      task.params = parse_gen_params(body, ctx.defaults(), Api::Native, new_request_seed());
      const InfillInput in = parse_infill_input(body, tokenizer);
      const InfillLimits lim{ctx.settings().n_batch, ctx.defaults().n_predict,
                             ctx.model().scheduler->config().n_ctx_slot, ctx.settings().spm_infill};
      task.prompt = assemble_infill_prompt(tokenizer, in, lim);
      ctx.check_prompt_fits(task.prompt.size());
      ShaperInfo info;
      info.id = new_response_id("cmpl-");
      info.model = ctx.alias();
      info.created = std::time(nullptr);
      info.logprobs = task.params.logprobs;
      info.n_probs = task.params.n_probs;
      Json settings = ctx.generation_settings(task.params);
      relay_task(ctx, req, res, std::move(task), make_native_shaper(info, settings), get_bool(body, "stream", false));
    });
  });
}

}  // namespace oscar::server
