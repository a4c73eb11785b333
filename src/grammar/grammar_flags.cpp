#include "grammar/grammar_flags.h"

#include <nlohmann/json.hpp>

#include "grammar/json_schema_to_gbnf.h"

namespace oscar::grammar {

std::shared_ptr<const Grammar> grammar_from_flags(const std::string& gbnf, const std::string& json_schema) {
  if (!gbnf.empty() && !json_schema.empty()) throw Error("give either --grammar(-file) or --json-schema(-file), not both");
  if (!gbnf.empty()) {
    try {
      return std::make_shared<const Grammar>(parse_gbnf(gbnf));
    } catch (const Error& e) {
      throw Error(std::string("--grammar: ") + e.what());
    }
  }
  if (json_schema.empty()) return nullptr;
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(json_schema);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("--json-schema: not valid JSON: ") + e.what());
  }
  try {
    return std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(schema)));
  } catch (const Error& e) {
    throw Error(std::string("--json-schema: ") + e.what());
  }
}

}  // namespace oscar::grammar
