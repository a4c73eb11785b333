#include "server/tool_grammar.h"

#include "chat/reasoning_parser.h"
#include "grammar/gbnf_text.h"
#include "grammar/json_schema_to_gbnf.h"
#include "server/api_error.h"
#include "server/grammar_request.h"

namespace oscar::server {

namespace {

// Which function names the request forces: all tools for "required", one
// for {"type": "function", "function": {"name": ...}}; empty: none forced.
std::vector<const Json*> forced_functions(const Json& body) {
  std::vector<const Json*> out;
  auto tc = body.find("tool_choice");
  auto tools = body.find("tools");
  if (tc == body.end() || tools == body.end() || !tools->is_array() || tools->empty()) return out;
  std::string name;
  if (tc->is_string()) {
    if (tc->get<std::string>() != "required") return out;
  } else if (tc->is_object()) {
    const Json fn = tc->value("function", Json::object());
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string())
      throw bad_request("'tool_choice.function.name' must be a string");
    name = fn["name"].get<std::string>();
  } else {
    return out;
  }
  for (const auto& t : *tools)
    if (name.empty() || t["function"]["name"] == name) out.push_back(&t["function"]);
  if (out.empty()) throw bad_request("'tool_choice' names the function '" + name + "', which is not in 'tools'");
  return out;
}

}  // namespace

std::string tool_call_gbnf(const Json& body, const chat::ChatOutputFormat& fmt, const std::string& prompt) {
  const std::vector<const Json*> fns = forced_functions(body);
  if (fns.empty()) return "";
  // Only the Hermes/Qwen syntax has a grammar so far; Gemma 4's call
  // notation (and templates without tool calls) stay unconstrained.
  if (!fmt.tools || *fmt.tools != chat::ToolCallFormat::Hermes) return "";
  grammar::JsonGrammarBuilder b;
  std::string calls;
  for (size_t i = 0; i < fns.size(); ++i) {
    const Json& fn = *fns[i];
    const Json params = fn.contains("parameters") && !fn["parameters"].is_null() ? fn["parameters"] : Json{{"type", "object"}};
    std::string args;
    try {
      args = b.add(params, "tool" + std::to_string(i) + "-args");
    } catch (const Error& e) {
      throw bad_request("tools[" + fn["name"].get<std::string>() + "].parameters: invalid or unsupported JSON schema: " + e.what());
    }
    // The Hermes body the output parser reads: {"name": ..., "arguments": ...}.
    const std::string head = "<tool_call>\n{\"name\": " + Json(fn["name"]).dump() + ", \"arguments\": ";
    b.add_rule("tool" + std::to_string(i) + "-call", grammar::gbnf_literal(head) + " " + args + " " + grammar::gbnf_literal("}\n</tool_call>"));
    calls += (i ? " | " : "") + ("tool" + std::to_string(i) + "-call");
  }
  b.add_rule("call", calls);
  const bool parallel = body.value("parallel_tool_calls", Json(true)) != Json(false);
  const std::string call_list = parallel ? "call (\"\\n\"? call)*" : "call";
  // When the template has opened a think block the model finishes it
  // freely (it may not contain "</", which keeps the closing marker
  // unambiguous); otherwise the call comes first: an optional think block
  // would let a model wander there instead of calling.
  std::string root = "[ \\n]{0,2} " + call_list;
  if (fmt.reasoning && fmt.reasoning->start == "<think>" && chat::prompt_opens_reasoning(prompt, *fmt.reasoning)) {
    b.add_rule("think-body", R"(([^<] | "<" [^/])* "</think>")");
    root = "think-body " + root;
  }
  b.add_rule("root", root);
  return b.gbnf();
}

std::shared_ptr<const grammar::Grammar> tool_call_grammar(const Json& body, const chat::ChatOutputFormat& fmt,
                                                          const std::string& prompt, grammar::GrammarCache& cache) {
  const std::string gbnf = tool_call_gbnf(body, fmt, prompt);
  if (gbnf.empty()) return nullptr;
  return compile_gbnf(gbnf, cache);
}

}  // namespace oscar::server
