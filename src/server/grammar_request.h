// The structured-output fields of a request: `grammar` (GBNF) and
// `json_schema` on every endpoint, and on chat `response_format`
// ({"type": "json_object"} or {"type": "json_schema", "json_schema":
// {"schema": ...}}). A grammar or schema that does not compile is a 400
// whose message says what and where.
#pragma once

#include <memory>

#include "grammar/grammar.h"
#include "grammar/grammar_cache.h"
#include "server/request_parse.h"

namespace oscar::server {

// The request's grammar, compiled (through `cache`); null when the request
// asks for none (the server's default then applies).
std::shared_ptr<const grammar::Grammar> parse_grammar_request(const Json& body, Api api, grammar::GrammarCache& cache);

// Compiles GBNF text or a JSON schema (given as JSON text) for server
// defaults and tools; throws ApiError(400).
std::shared_ptr<const grammar::Grammar> compile_gbnf(const std::string& gbnf, grammar::GrammarCache& cache);
std::shared_ptr<const grammar::Grammar> compile_json_schema(const Json& schema, grammar::GrammarCache& cache);

}  // namespace oscar::server
