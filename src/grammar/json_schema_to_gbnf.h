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

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace oscar::grammar {

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace oscar::grammar
