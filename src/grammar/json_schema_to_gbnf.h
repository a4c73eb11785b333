// JSON Schema -> GBNF: a grammar whose sentences are JSON texts that
// validate against the schema (the converse does not hold everywhere: e.g.
// object properties come in the schema's order).
//
// Supported: type (and lists of types), properties / required /
// additionalProperties, enum, const, items / prefixItems / minItems /
// maxItems, minLength / maxLength / pattern (regex subset) / format (date,
// time, date-time, uuid), integer minimum / maximum / exclusive bounds,
// anyOf / oneOf (as alternatives), allOf of object schemas, $ref into
// $defs / definitions, nullable. Annotations (title, description, ...) are
// ignored. Anything else is an Error naming the keyword and where it is.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace oscar::grammar {

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

namespace detail {
class Converter;
}

// Several schemas in one grammar (e.g. one per tool), sharing the JSON
// primitives: add() each schema, add_rule() the rules that tie them
// together (including `root`), then gbnf().
class JsonGrammarBuilder {
 public:
  JsonGrammarBuilder();
  ~JsonGrammarBuilder();
  // Returns the name of the rule matching the schema's JSON values.
  std::string add(const nlohmann::ordered_json& schema, const std::string& name_hint);
  void add_rule(const std::string& name, const std::string& body);
  std::string gbnf() const;

 private:
  std::unique_ptr<detail::Converter> c_;
};

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace oscar::grammar
