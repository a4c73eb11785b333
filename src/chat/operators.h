// Python's arithmetic and string operators on template values
// (+ - * / // % ** and jinja's ~), with Python's type rules and error texts.
#pragma once

#include <string>

#include "chat/interpreter.h"
#include "chat/value.h"

namespace oscar::chat {

Value binary_op(Interpreter& in, const std::string& op, const Value& a, const Value& b);

}  // namespace oscar::chat
