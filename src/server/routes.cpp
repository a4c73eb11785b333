#include "server/routes.h"

#include <httplib.h>

#include <algorithm>
#include <random>

#include "server/anthropic_error.h"
#include "server/anthropic_routes.h"
#include "server/auth.h"
#include "server/chat_continuation.h"
#include "server/http_policy.h"
#include "server/http_util.h"
#include "server/kv_report.h"
#include "server/embeddings_routes.h"
#include "server/infill_routes.h"
#include "server/metrics.h"
#include "server/responses_routes.h"
#include "server/server_context.h"
#include "server/slot_routes.h"
#include "server/webui_routes.h"

namespace oscar::server {

namespace {

using httplib::Request;
using httplib::Response;

Json model_list(const ServerContext& ctx) {
  const LoadedModel& m = ctx.model();
  Json meta = {{"n_vocab", m.n_vocab}, {"n_ctx_train", m.n_ctx_train}, {"n_embd", m.n_embd},
               {"n_layer", m.n_layer}, {"size", m.file_bytes}, {"arch", m.arch}};
  Json entry = {{"id", ctx.alias()}, {"object", "model"}, {"created", (long long)std::time(nullptr)},
                {"owned_by", "oscar.cpp"}, {"tags", ctx.settings().tags}, {"meta", meta}};
  return {{"object", "list"}, {"data", Json::array({entry})}};
}

// The client's X-Request-Id when it is a sane token (a balancer or client
// tracing a request across replicas), else a new random one; echoed on the
// response so logs on both sides can be joined.
std::string request_id(const std::string& given) {
  const bool sane = !given.empty() && given.size() <= 128 &&
                    std::all_of(given.begin(), given.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (sane) return given;
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string id(32, '0');
  for (char& c : id) c = kHex[rd() % 16];
  return id;
}

void register_misc(httplib::Server& svr, ServerContext& ctx) {
  auto health = [&ctx](const Request& req, Response& res) {
    if (!ctx.ready()) return reply_error(res, ApiError(503, "Loading model", "unavailable_error"));
    // Draining: balancers must stop sending here before the process goes.
    if (ctx.draining()) return reply_error(res, ApiError(503, "the server is shutting down", "unavailable_error"));
    // As llama-server: ?fail_on_no_slot=1 turns "every slot busy" into a 503,
    // so a balancer's check can send new work to a replica with room.
    if (req.get_param_value("fail_on_no_slot") == "1") {
      const Scheduler& sch = *ctx.model().scheduler;
      if (sch.stats().processing >= sch.config().n_slots)
        return reply_error(res, ApiError(503, "no slot available", "unavailable_error"));
    }
    reply_json(res, {{"status", "ok"}});
  };
  svr.Get("/health", health);
  svr.Get("/v1/health", health);

  auto models = [&ctx](const Request&, Response& res) { reply_json(res, model_list(ctx)); };
  svr.Get("/v1/models", models);
  svr.Get("/models", models);

  svr.Post("/tokenize", [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const std::string content = get_string(body, "content", "");
      const bool add_special = get_bool(body, "add_special", false);
      const bool with_pieces = get_bool(body, "with_pieces", false);
      const tok::Tokenizer& t = *ctx.model().tokenizer;
      const auto ids = t.tokenize(content, add_special, /*parse_special=*/true);
      Json tokens = Json::array();
      for (int32_t id : ids) {
        if (with_pieces) tokens.push_back({{"id", id}, {"piece", t.token_to_piece(id, true)}});
        else tokens.push_back(id);
      }
      reply_json(res, {{"tokens", tokens}});
    });
  });

  svr.Post("/detokenize", [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const Json tokens = body.contains("tokens") ? body["tokens"] : Json::array();
      const auto ids = parse_token_array(tokens, "tokens", ctx.model().n_vocab);
      reply_json(res, {{"content", ctx.model().tokenizer->detokenize(ids)}});
    });
  });

  svr.Post("/apply-template", [&ctx](const Request& req, Response& res) {
    guarded(res, [&] {
      const Json body = parse_body(req.body);
      const ChatRequest cr = parse_chat_request(body);
      reply_json(res, {{"prompt", chat_prompt(cr, [&](const ChatRequest& r) { return ctx.render_chat(r); })}});
    });
  });

  svr.Get("/props", [&ctx](const Request&, Response& res) { reply_json(res, ctx.props()); });
  // As llama-server: allowed with --props; no property is changeable yet, so it only acknowledges.
  svr.Post("/props", [&ctx](const Request&, Response& res) {
    if (!ctx.settings().props_endpoint)
      return reply_error(res, ApiError(501, "This server does not support changing global properties. Start it with `--props`",
                                       "not_supported_error"));
    reply_json(res, {{"success", true}});
  });

  svr.Get("/slots", [&ctx](const Request&, Response& res) {
    if (!ctx.settings().slots_endpoint)
      return reply_error(res, ApiError(501, "This server does not support slots endpoint.", "not_supported_error"));
    Json out = Json::array();
    const Json tiers = to_json(ctx.model().kv_tiers);
    for (const SlotInfo& s : ctx.model().scheduler->slots()) {
      out.push_back({{"id", s.id}, {"n_ctx", s.n_ctx}, {"is_processing", s.processing},
                     {"n_cached", s.n_cached}, {"n_prompt_tokens", s.n_prompt}, {"n_decoded", s.n_decoded},
                     {"kv_positions_held", s.kv_positions_held}, {"kv_cache_tiers", tiers}});
      out.back()["kv"] = kv_usage_json(s.kv);
    }
    reply_json(res, out);
  });

  svr.Get("/metrics", [&ctx](const Request&, Response& res) {
    if (!ctx.settings().metrics)
      return reply_error(res, ApiError(501, "This server does not support metrics endpoint (start it with --metrics).",
                                       "not_supported_error"));
    const Scheduler& sch = *ctx.model().scheduler;
    res.set_content(render_metrics(sch.stats(), snapshot(ctx.counters), sch.config().n_slots),
                    "text/plain; version=0.0.4");
  });
}

}  // namespace

void register_routes(httplib::Server& svr, ServerContext& ctx) {
  svr.set_default_headers({{"Access-Control-Allow-Origin", "*"}, {"Server", "oscar-server"}});

  svr.set_pre_routing_handler([&ctx](const Request& req, Response& res) {
    ctx.counters.requests++;
    res.set_header("X-Request-Id", request_id(req.get_header_value("X-Request-Id")));
    add_cors_headers(req, res);
    if (answer_preflight(req, res)) return httplib::Server::HandlerResponse::Handled;
    // The web UI's files need neither a key nor a loaded model (the page
    // shows the loading state itself).
    if (is_webui_request(ctx.settings(), req.method, req.path)) return httplib::Server::HandlerResponse::Unhandled;
    const std::string key =
        presented_key(req.get_header_value("Authorization"), req.get_header_value("X-Api-Key"));
    // Public paths skip the key, not the wait for the model (their handlers read it).
    if (!is_public_path(req.path) && !key_accepted(ctx.settings().api_keys, key)) {
      if (req.path.rfind("/v1/messages", 0) == 0)  // Anthropic's clients read their own error shape
        reply_json(res, anthropic_error_body(401, "Invalid API Key"), 401);
      else
        reply_error(res, ApiError(401, "Invalid API Key", "authentication_error"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!ctx.ready()) {
      reply_error(res, ApiError(503, "Loading model", "unavailable_error"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Statuses httplib produces itself (404 unknown route, 413 body too large,
  // 400 unparsable request) get an OpenAI error body too.
  svr.set_error_handler([&ctx](const Request& req, Response& res) {
    ctx.counters.errors++;
    if (!res.body.empty()) return;
    std::string msg = res.status == 404   ? "File Not Found: " + req.path
                      : res.status == 413 ? "request body too large (limit " +
                                                std::to_string(ctx.settings().max_body_bytes) + " bytes)"
                                          : "bad request";
    reply_json(res, error_body(res.status, msg), res.status);
  });

  svr.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      return reply_error(res, e);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    reply_json(res, error_body(500, msg), 500);
  });

  register_misc(svr, ctx);
  register_generation_routes(svr, ctx);
  register_webui_routes(svr, ctx.settings());
  register_anthropic_routes(svr, ctx);
  register_responses_routes(svr, ctx);
  register_embeddings_routes(svr, ctx);
  register_infill_routes(svr, ctx);
  register_slot_routes(svr, ctx);
}

}  // namespace oscar::server
