#include "server/server_context.h"

#include "chat/template_context.h"
#include "chat/template_error.h"
#include "server/api_error.h"
#include "server/kv_report.h"
#include "server/build_info.h"

namespace oscar::server {

const char* chatml_template() {
  return "{%- for message in messages -%}"
         "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
         "{%- endfor -%}"
         "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";
}

void ServerContext::publish(std::unique_ptr<LoadedModel> m) {
  model_ = std::move(m);
  if (!settings_.alias.empty()) {
    alias_ = settings_.alias;
  } else {
    const auto slash = model_->path.find_last_of('/');
    alias_ = slash == std::string::npos ? model_->path : model_->path.substr(slash + 1);
  }
  ready_.store(true, std::memory_order_release);
}

std::string ServerContext::render_chat(const ChatRequest& r) const {
  chat::ChatInputs in;
  in.messages = r.messages;
  in.tools = r.tools;
  in.add_generation_prompt = r.add_generation_prompt;
  // As llama-server: today's date, the server's defaults (--chat-template-kwargs,
  // --reasoning), then the request's own.
  in.extra = chat::date_variables(std::time(nullptr));
  for (const auto& [k, v] : settings_.default_template_kwargs.items()) in.extra[k] = v;
  if (r.template_kwargs.is_object())
    for (const auto& [k, v] : r.template_kwargs.items()) in.extra[k] = v;
  try {
    return model_->tmpl->apply(in);
  } catch (const chat::TemplateError& e) {
    throw bad_request(std::string("chat template: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw bad_request(std::string("chat template input: ") + e.what());
  }
}

std::vector<int32_t> ServerContext::tokenize_prompt(const std::string& text, bool add_special) const {
  std::vector<int32_t> toks = model_->tokenizer->tokenize(text, add_special, /*parse_special=*/true);
  if (toks.empty()) {
    const int32_t bos = model_->tokenizer->vocab().bos();
    if (bos == tok::kNoToken) throw bad_request("the prompt is empty");
    toks.push_back(bos);
  }
  return toks;
}

void ServerContext::check_prompt_fits(size_t n_prompt) const {
  const int n_ctx = model_->scheduler->config().n_ctx_slot;
  if ((long long)n_prompt >= n_ctx) {
    const bool unified = model_->scheduler->stats().kv_unified;
    ApiError e(400,
               "the request exceeds the available context size: the prompt has " + std::to_string(n_prompt) +
                   " tokens and a conversation holds at most " + std::to_string(n_ctx) +
                   (unified ? " (the smaller of -c, the KV pool, and the model's context)"
                            : " (-c divided among -np slots: --no-kv-unified)"),
               "exceed_context_size_error");
    e.extra = {{"n_prompt_tokens", n_prompt}, {"n_ctx", n_ctx}};
    throw e;
  }
}

Json ServerContext::generation_settings(const GenParams& p) const {
  const auto& s = p.sampling;
  return {{"n_ctx", model_->scheduler->config().n_ctx_slot},
          {"n_predict", p.n_predict},
          {"n_keep", p.n_keep},
          {"n_discard", p.n_discard},
          {"model", alias_},
          {"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"typical_p", s.typical_p},
          {"repeat_last_n", s.penalty_last_n},
          {"repeat_penalty", s.repeat_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"seed", s.seed},
          {"stop", p.stop},
          {"ignore_eos", p.ignore_eos},
          {"n_probs", p.n_probs},
          {"cache_prompt", p.cache_prompt}};
}

namespace {
Json kv_pool_json(const SchedulerStats& st) {
  return {{"unified", st.kv_unified},
          {"positions", st.kv_pool_positions},
          {"used_positions", st.kv_pool_used_positions},
          {"free_positions", st.kv_pool_positions - st.kv_pool_used_positions},
          {"bytes_allocated", st.kv_bytes_allocated},
          {"idle_slots_dropped", st.kv_slots_dropped},
          {"shared_positions", st.kv_pool_shared_positions},
          {"prefixes_shared", st.kv_prefixes_shared}};
}
// --cache-ram: conversations kept in host memory after leaving their slots.
Json host_cache_json(const HostCacheStats& h) {
  return {{"limit_mib", h.limit_bytes < 0 ? -1 : h.limit_bytes >> 20},
          {"entries", h.entries},
          {"bytes", h.bytes},
          {"saved", h.saved},
          {"hits", h.hits},
          {"evicted", h.evicted}};
}
}  // namespace

Json ServerContext::props() const {
  const LoadedModel& m = *model_;
  return {{"default_generation_settings", {{"n_ctx", m.scheduler->config().n_ctx_slot},
                                           {"params", generation_settings(defaults_)}}},
          {"total_slots", m.scheduler->config().n_slots},
          {"model_alias", alias_},
          {"model_path", m.path},
          {"chat_template", m.template_source},
          {"bos_token", m.tokenizer->vocab().bos() != tok::kNoToken ? m.tokenizer->vocab().text(m.tokenizer->vocab().bos()) : ""},
          {"eos_token", m.tokenizer->vocab().eos() != tok::kNoToken ? m.tokenizer->vocab().text(m.tokenizer->vocab().eos()) : ""},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"kv_cache", m.kv_description},
          {"kv", kv_json()},
          {"kv_pool", kv_pool_json(m.scheduler->stats())},
          {"is_sleeping", m.scheduler->stats().sleeping},
          {"prompt_cache_ram", host_cache_json(m.scheduler->stats().host_cache)},
          {"kv_cache_tiers", to_json(m.kv_tiers)},
          {"build_info", build_id()},
          {"webui", settings_.webui}};
}

Json ServerContext::kv_json() const {
  const LoadedModel& m = *model_;
  if (!m.kv_cache) return nullptr;
  const SchedulerStats st = m.scheduler->stats();
  return kv_props_json(*m.kv_cache, m.n_layer, m.kv_rotations, st.kv, st.kv_bytes_allocated);
}

}  // namespace oscar::server
