// The --grammar / --grammar-file / --json-schema / --json-schema-file flags of
// oscar-cli and oscar-server, compiled once at startup.
#pragma once

#include <memory>
#include <string>

#include "grammar/grammar.h"

namespace oscar::grammar {

// GBNF text or JSON Schema text (at most one non-empty) -> compiled grammar;
// null when both are empty. Throws Error naming the flag and the problem.
std::shared_ptr<const Grammar> grammar_from_flags(const std::string& gbnf, const std::string& json_schema);

}  // namespace oscar::grammar
