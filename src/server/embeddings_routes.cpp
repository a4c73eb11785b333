#include "server/embeddings_routes.h"

#include <httplib.h>

#include "server/embeddings_engine.h"
#include "server/http_util.h"
#include "server/server_context.h"

namespace oscar::server {

namespace {

using httplib::Request;
using httplib::Response;

Embedder& embedder_of(const ServerContext& ctx) {
  if (!ctx.model().embedder)
    throw ApiError(501, "This server does not support embeddings. Start it with `--embeddings`", "not_supported_error");
  return *ctx.model().embedder;
}

// `input` (or `content`): a string, token ids, or an array of strings and
// token-id arrays; one token list per input.
std::vector<std::vector<int32_t>> input_tokens(const ServerContext& ctx, const Json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) throw bad_request(std::string("'") + key + "' is required");
  const Json& in = body[key];
  const int n_vocab = ctx.model().n_vocab;
  std::vector<Json> items;
  if (in.is_string() || (in.is_array() && !in.empty() && in[0].is_number())) items.push_back(in);
  else if (in.is_array()) items.assign(in.begin(), in.end());
  else throw bad_request(std::string("'") + key + "' must be a string, token ids, or an array of them");
  if (items.empty()) throw bad_request(std::string("'") + key + "' holds no inputs");
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    std::vector<int32_t> toks;
    if (items[i].is_string()) {
      if (items[i].get<std::string>().empty()) throw bad_request("'" + at + "' is empty");
      toks = ctx.model().tokenizer->tokenize(items[i].get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
    } else {
      toks = parse_token_array(items[i], at, n_vocab);
    }
    if (toks.empty()) throw bad_request("'" + at + "' is empty");
    const int cap = embedder_of(ctx).capacity();
    if ((int)toks.size() > cap)
      throw bad_request("'" + at + "' has " + std::to_string(toks.size()) + " tokens; the embedding context holds " +
                        std::to_string(cap));
    out.push_back(std::move(toks));
  }
  return out;
}

std::vector<float> pooled(Embedder& e, const std::vector<int32_t>& toks, int normalize) {
  const std::vector<float> h = e.hidden_states(toks);
  std::vector<float> v = pool_rows(h.data(), (int)toks.size(), e.n_embd(), e.pooling());
  normalize_embedding(v, normalize);
  return v;
}

void openai_embeddings(ServerContext& ctx, const Request& req, Response& res) {
  const Json body = parse_body(req.body);
  Embedder& e = embedder_of(ctx);
  if (e.pooling() == Pooling::None)
    throw bad_request("Pooling type 'none' is not OAI compatible. Please use a different pooling type");
  const std::string format = get_string(body, "encoding_format", "float");
  if (format != "float" && format != "base64") throw bad_request("'encoding_format' must be float or base64");
  if (body.contains("dimensions") && !body["dimensions"].is_null() &&
      !(body["dimensions"].is_number_integer() && body["dimensions"].get<long long>() == e.n_embd()))
    throw bad_request("'dimensions': this model's embeddings have " + std::to_string(e.n_embd()));
  const auto inputs = input_tokens(ctx, body, "input");
  Json data = Json::array();
  size_t n_tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> v = pooled(e, inputs[i], 2);
    n_tokens += inputs[i].size();
    data.push_back({{"object", "embedding"}, {"index", i},
                    {"embedding", format == "base64" ? Json(embedding_base64(v)) : Json(v)}});
  }
  reply_json(res, {{"object", "list"}, {"data", data}, {"model", ctx.alias()},
                   {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}});
}

void native_embeddings(ServerContext& ctx, const Request& req, Response& res) {
  const Json body = parse_body(req.body);
  Embedder& e = embedder_of(ctx);
  const char* key = body.contains("content") ? "content" : "input";
  int normalize = 2;
  if (body.contains("embd_normalize") && !body["embd_normalize"].is_null()) {
    if (!body["embd_normalize"].is_number_integer()) throw bad_request("'embd_normalize' must be an integer");
    normalize = (int)std::clamp<long long>(body["embd_normalize"].get<long long>(), -1, 64);
  }
  const auto inputs = input_tokens(ctx, body, key);
  Json out = Json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Json rows = Json::array();
    if (e.pooling() == Pooling::None) {
      // Per token and unnormalised, as llama-server gives them.
      const std::vector<float> h = e.hidden_states(inputs[i]);
      const size_t E = (size_t)e.n_embd();
      for (size_t t = 0; t < inputs[i].size(); ++t)
        rows.push_back(std::vector<float>(h.begin() + (long)(t * E), h.begin() + (long)((t + 1) * E)));
    } else {
      rows.push_back(pooled(e, inputs[i], normalize));
    }
    out.push_back({{"index", i}, {"embedding", rows}});
  }
  reply_json(res, out);
}

}  // namespace

void register_embeddings_routes(httplib::Server& svr, ServerContext& ctx) {
  auto oai = [&ctx](const Request& req, Response& res) { guarded(res, [&] { openai_embeddings(ctx, req, res); }); };
  svr.Post("/v1/embeddings", oai);
  auto native = [&ctx](const Request& req, Response& res) { guarded(res, [&] { native_embeddings(ctx, req, res); }); };
  svr.Post("/embedding", native);
  svr.Post("/embeddings", native);

  auto rerank = [](const Request&, Response& res) {
    reply_error(res, bad_request("the model is not a reranker: reranking needs a model with a rank pooling head "
                                 "(--embedding --pooling rank), and oscar-server serves none yet"));
  };
  for (const char* path : {"/rerank", "/reranking", "/v1/rerank", "/v1/reranking"}) svr.Post(path, rerank);
}

}  // namespace oscar::server
