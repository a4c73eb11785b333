#include "server/grammar_request.h"

#include "grammar/json_schema_to_gbnf.h"
#include "server/api_error.h"

namespace oscar::server {

std::shared_ptr<const grammar::Grammar> compile_gbnf(const std::string& gbnf, grammar::GrammarCache& cache) {
  try {
    return cache.get("gbnf:" + gbnf, [&] { return gbnf; });
  } catch (const Error& e) {
    throw bad_request(std::string("invalid grammar: ") + e.what());
  }
}

std::shared_ptr<const grammar::Grammar> compile_json_schema(const Json& schema, grammar::GrammarCache& cache) {
  try {
    return cache.get("schema:" + schema.dump(), [&] { return grammar::json_schema_to_gbnf(schema); });
  } catch (const Error& e) {
    throw bad_request(std::string("invalid or unsupported JSON schema: ") + e.what());
  }
}

namespace {

const Json* present(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

// A schema field may be an object or (as llama-server allows) a JSON string.
Json schema_of(const Json& v, const std::string& field) {
  if (v.is_object() || v.is_boolean()) return v;
  if (v.is_string()) {
    Json parsed = Json::parse(v.get<std::string>(), nullptr, false);
    if (!parsed.is_discarded() && (parsed.is_object() || parsed.is_boolean())) return parsed;
  }
  throw bad_request("'" + field + "' must be a JSON schema object");
}

}  // namespace

std::shared_ptr<const grammar::Grammar> parse_grammar_request(const Json& body, Api api, grammar::GrammarCache& cache) {
  const Json* g = present(body, "grammar");
  const Json* js = present(body, "json_schema");
  const Json* rf = api == Api::Chat ? present(body, "response_format") : nullptr;
  if (rf && (!rf->is_object() || rf->value("type", "text") == "text")) rf = nullptr;
  if ((g != nullptr) + (js != nullptr) + (rf != nullptr) > 1)
    throw bad_request("give only one of 'grammar', 'json_schema' and 'response_format'");
  if (g) {
    if (!g->is_string()) throw bad_request("'grammar' must be a string (GBNF)");
    return compile_gbnf(g->get<std::string>(), cache);
  }
  if (js) return compile_json_schema(schema_of(*js, "json_schema"), cache);
  if (!rf) return nullptr;
  const std::string type = rf->value("type", "text");
  if (type == "json_object") {
    // llama-server also takes a schema here.
    if (const Json* s = present(*rf, "schema")) return compile_json_schema(schema_of(*s, "response_format.schema"), cache);
    return compile_gbnf(grammar::json_object_gbnf(), cache);
  }
  if (type == "json_schema") {
    const Json* spec = present(*rf, "json_schema");
    if (!spec || !spec->is_object()) throw bad_request("'response_format.json_schema' must be an object");
    const Json* s = present(*spec, "schema");
    if (!s) throw bad_request("'response_format.json_schema.schema' is required");
    return compile_json_schema(schema_of(*s, "response_format.json_schema.schema"), cache);
  }
  return nullptr;  // other types are rejected by parse_chat_request
}

}  // namespace oscar::server
