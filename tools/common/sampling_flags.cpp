// llama.cpp's sampling flags (the defaults of requests that do not set their
// own) and the chat-template flags, bound to RunSettings.
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chat_setup.h"
#include "core/error.h"
#include "llama_flags.h"

namespace oscar::tools {

namespace {

constexpr FlagGroup S = FlagGroup::Sampling;
constexpr FlagGroup E = FlagGroup::Example;
const char* const kNoStage = "the sampler chain has no such stage (penalties, top-k, typical, top-p, min-p, temperature)";
const char* const kFixedChain = "the sampler order is fixed: penalties, top-k, typical, top-p, min-p, temperature";

std::string read_file_text(const std::string& flag, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(flag + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "TOKEN_ID+BIAS" / "TOKEN_ID-BIAS" (BIAS may be "inf").
std::pair<int32_t, float> parse_logit_bias(const std::string& v) {
  const size_t sign = v.find_first_of("+-", 1);
  if (sign == std::string::npos) throw Error("-l: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS, got '" + v + "'");
  const int id = flag_int("-l", v.substr(0, sign));
  if (id < 0) throw Error("-l: token id must not be negative, got '" + v + "'");
  const std::string mag = v.substr(sign + 1);
  float b = mag == "inf" ? std::numeric_limits<float>::infinity() : flag_float("-l", mag);
  if (v[sign] == '-') b = -b;
  return {id, b};
}

}  // namespace

std::vector<FlagSpec> sampling_flag_specs(RunSettings& s) {
  auto& p = s.sampling;
  auto fval = [](float& dst, const char* f) { return [&dst, f](const std::string& v) { dst = flag_float(f, v); }; };
  auto ival = [](int& dst, const char* f) { return [&dst, f](const std::string& v) { dst = flag_int(f, v); }; };
  return {
      no_effect(S, {"--samplers"}, "SAMPLERS", "", kFixedChain),
      flag(S, {"-s", "--seed"}, "SEED", "", "seed of requests that set none (default: -1, a random seed per request)",
           [&s](const std::string& v) {
             const int seed = flag_int("--seed", v);
             s.seed_given = seed != -1;
             if (s.seed_given) s.sampling.seed = (uint64_t)(uint32_t)seed;
           }),
      no_effect(S, {"--sampler-seq", "--sampling-seq"}, "SEQUENCE", "", kFixedChain),
      flag(S, {"--ignore-eos"}, "", "", "keep generating past end-of-generation tokens (default of requests)",
           [&s](const std::string&) { s.ignore_eos = true; }),
      flag(S, {"--temp", "--temperature"}, "N", "", "temperature (default: 0.80; 0: greedy)", fval(p.temperature, "--temp")),
      flag(S, {"--top-k"}, "N", "LLAMA_ARG_TOP_K", "top-k sampling (default: 40, 0 = disabled)", ival(p.top_k, "--top-k")),
      flag(S, {"--top-p"}, "N", "", "top-p sampling (default: 0.95, 1.0 = disabled)", fval(p.top_p, "--top-p")),
      flag(S, {"--min-p"}, "N", "", "min-p sampling (default: 0.05, 0.0 = disabled)", fval(p.min_p, "--min-p")),
      no_effect(S, {"--top-nsigma", "--top-n-sigma"}, "N", "", kNoStage),
      no_effect(S, {"--xtc-probability"}, "N", "", kNoStage),
      no_effect(S, {"--xtc-threshold"}, "N", "", kNoStage),
      flag(S, {"--typical", "--typical-p"}, "N", "", "locally typical sampling (default: 1.0 = disabled)",
           fval(p.typical_p, "--typical")),
      flag(S, {"--repeat-last-n"}, "N", "", "tokens the penalties look back on (default: 64, 0 = off, -1 = context)",
           ival(p.penalty_last_n, "--repeat-last-n")),
      flag(S, {"--repeat-penalty"}, "N", "", "repetition penalty (default: 1.0 = disabled)",
           fval(p.repeat_penalty, "--repeat-penalty")),
      flag(S, {"--presence-penalty"}, "N", "", "presence penalty (default: 0.0 = disabled)",
           fval(p.presence_penalty, "--presence-penalty")),
      flag(S, {"--frequency-penalty"}, "N", "", "frequency penalty (default: 0.0 = disabled)",
           fval(p.frequency_penalty, "--frequency-penalty")),
      no_effect(S, {"--dry-multiplier"}, "N", "", kNoStage),
      no_effect(S, {"--dry-base"}, "N", "", kNoStage),
      no_effect(S, {"--dry-allowed-length"}, "N", "", kNoStage),
      no_effect(S, {"--dry-penalty-last-n"}, "N", "", kNoStage),
      no_effect(S, {"--dry-sequence-breaker"}, "STRING", "", kNoStage),
      no_effect(S, {"--adaptive-target"}, "N", "", kNoStage),
      no_effect(S, {"--adaptive-decay"}, "N", "", kNoStage),
      no_effect(S, {"--dynatemp-range"}, "N", "", kNoStage),
      no_effect(S, {"--dynatemp-exp"}, "N", "", kNoStage),
      no_effect(S, {"--mirostat"}, "N", "", kNoStage),
      no_effect(S, {"--mirostat-lr"}, "N", "", kNoStage),
      no_effect(S, {"--mirostat-ent"}, "N", "", kNoStage),
      flag(S, {"-l", "--logit-bias"}, "TOKEN_ID(+/-)BIAS", "",
           "add BIAS to a token's logit in every request, e.g. 15043+1 or 15043-inf (repeatable)",
           [&p](const std::string& v) { p.logit_bias.push_back(parse_logit_bias(v)); }),
      flag(S, {"--grammar"}, "GRAMMAR", "", "GBNF grammar constraining generation (default of requests)",
           [&s](const std::string& v) { s.grammar = v; }),
      flag(S, {"--grammar-file"}, "FNAME", "", "read the grammar from a file",
           [&s](const std::string& v) { s.grammar = read_file_text("--grammar-file", v); }),
      flag(S, {"-j", "--json-schema"}, "SCHEMA", "", "JSON schema constraining generation (default of requests)",
           [&s](const std::string& v) { s.json_schema = v; }),
      flag(S, {"-jf", "--json-schema-file"}, "FILE", "", "read the JSON schema from a file",
           [&s](const std::string& v) { s.json_schema = read_file_text("--json-schema-file", v); }),
      no_effect(S, {"-bs", "--backend-sampling"}, "", "LLAMA_ARG_BACKEND_SAMPLING",
                "sampling always runs on the CPU, next to the model"),
  };
}

std::vector<FlagSpec> chat_flag_specs(RunSettings& s) {
  return {
      on_off(E, {"--jinja"}, {"--no-jinja"}, "LLAMA_ARG_JINJA",
             "render chat templates with the Jinja engine (default: on); --no-jinja: only built-in templates\n"
             "by name (--chat-template NAME; a model template that is not one of them falls back to chatml)",
             [&s](bool on) { s.jinja = on; }),
      flag(E, {"--reasoning-format"}, "FORMAT", "LLAMA_ARG_THINK",
           "thinking in responses: none (left in content), deepseek or auto (reasoning_content)",
           [&s](const std::string& v) {
             if (v != "none" && v != "deepseek" && v != "auto" && v != "deepseek-legacy")
               throw Error("--reasoning-format: expected none, deepseek, deepseek-legacy or auto, got '" + v + "'");
             s.reasoning_format = v == "none" ? "none" : "deepseek";
           }),
      flag(E, {"-rea", "--reasoning"}, "[on|off|auto]", "LLAMA_ARG_REASONING",
           "thinking in the chat: on, off (the template gets enable_thinking=false) or auto (the template's\n"
           "default)",
           [&s](const std::string& v) {
             if (v == "auto") s.reasoning = "auto";
             else s.reasoning = flag_bool_value("--reasoning", v) ? "on" : "off";
           }),
      flag(E, {"--reasoning-budget"}, "N", "LLAMA_ARG_THINK_BUDGET",
           "thinking budget: -1 unrestricted, 0 no thinking (enable_thinking=false); a positive budget is\n"
           "accepted but not enforced (thinking runs unrestricted)",
           [&s](const std::string& v) {
             s.reasoning_budget = flag_int("--reasoning-budget", v);
             if (s.reasoning_budget < -1) throw Error("--reasoning-budget: must be -1 or more, got '" + v + "'");
             if (s.reasoning_budget > 0)
               s.flag_notes.push_back("--reasoning-budget " + v +
                                      ": a positive budget is not enforced here; thinking runs unrestricted");
           }),
      no_effect(E, {"--reasoning-budget-message"}, "MESSAGE", "LLAMA_ARG_THINK_BUDGET_MESSAGE",
                "positive reasoning budgets are not enforced, so no message is injected"),
      flag(E, {"--chat-template"}, "JINJA_TEMPLATE", "LLAMA_ARG_CHAT_TEMPLATE",
           "chat template instead of the model's: a built-in name or Jinja text; built-in names:\n" +
               builtin_template_names_help(),
           [&s](const std::string& v) { s.chat_template = v; }),
      flag(E, {"--chat-template-file"}, "JINJA_TEMPLATE_FILE", "LLAMA_ARG_CHAT_TEMPLATE_FILE",
           "chat template from a file instead of the model's",
           [&s](const std::string& v) { s.chat_template_file = v; }),
      flag(E, {"--chat-template-kwargs"}, "STRING", "LLAMA_ARG_CHAT_TEMPLATE_KWARGS",
           "JSON object of extra template variables, the default of every chat request, e.g.\n"
           "'{\"enable_thinking\": false}'",
           [&s](const std::string& v) {
             nlohmann::json j;
             try {
               j = nlohmann::json::parse(v);
             } catch (const nlohmann::json::exception& e) {
               throw Error("--chat-template-kwargs: not valid JSON: " + std::string(e.what()));
             }
             if (!j.is_object()) throw Error("--chat-template-kwargs: must be a JSON object, got '" + v + "'");
             s.chat_template_kwargs = v;
           }),
  };
}

}  // namespace oscar::tools
