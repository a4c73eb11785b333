#include "grammar/json_schema_to_gbnf.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/gbnf_text.h"

namespace oscar::grammar {

namespace {

using Json = nlohmann::ordered_json;

// The grammar of plain JSON values. Whitespace between tokens is allowed as
// llama.cpp's converter allows it (a space, or a newline and indentation) but
// bounded, so a model cannot wander in whitespace forever; number parts are
// bounded for the same reason.
const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> p = {
      {"space", R"(| " " | "\n" [ \t]{0,20})"},
      {"char", R"([^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
      {"string", R"("\"" char* "\"" space)"},
      {"integral", R"("0" | [1-9] [0-9]{0,15})"},
      {"fraction", R"("." [0-9]{1,16})"},
      {"number", R"("-"? integral fraction? ([eE] [-+]? [0-9]{1,3})? space)"},
      {"integer", R"("-"? integral space)"},
      {"boolean", R"(("true" | "false") space)"},
      {"null", R"("null" space)"},
      {"value", R"(object | array | string | number | boolean | null)"},
      {"object", R"("{" space (string ":" space value ("," space string ":" space value)*)? "}" space)"},
      {"array", R"("[" space (value ("," space value)*)? "]" space)"},
      {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))"},
      {"time", R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"date-string", R"("\"" date "\"" space)"},
      {"time-string", R"("\"" time "\"" space)"},
      {"date-time-string", R"("\"" date "T" time "\"" space)"},
      {"uuid-string", R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space)"},
  };
  return p;
}

const std::map<std::string, std::vector<std::string>>& primitive_deps() {
  static const std::map<std::string, std::vector<std::string>> d = {
      {"string", {"char", "space"}},
      {"number", {"integral", "fraction", "space"}},
      {"integer", {"integral", "space"}},
      {"boolean", {"space"}},
      {"null", {"space"}},
      {"value", {"object", "array", "string", "number", "boolean", "null"}},
      {"object", {"space", "string", "value"}},
      {"array", {"space", "value"}},
      {"date-string", {"date", "space"}},
      {"time-string", {"time", "space"}},
      {"date-time-string", {"date", "time", "space"}},
      {"uuid-string", {"space"}},
  };
  return d;
}

// Keywords that describe a schema without constraining it.
const std::set<std::string>& annotations() {
  static const std::set<std::string> a = {"title", "description", "$schema", "$id", "$comment", "default",
                                          "examples", "example", "readOnly", "writeOnly", "deprecated",
                                          "$defs", "definitions", "strict", "name"};
  return a;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> s = {
      "type", "properties", "required", "additionalProperties", "enum", "const", "items", "prefixItems",
      "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
      "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "nullable"};
  return s;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '-';
  return out.empty() ? "x" : out;
}

}  // namespace

namespace detail {

class Converter {
 public:
  // Rules for one schema; returns the rule for its values.
  std::string add(const Json& schema, const std::string& name) {
    root_ = &schema;
    refs_.clear();  // $refs are relative to each schema
    return visit(schema, name, "#");
  }
  void set_rule(const std::string& name, const std::string& body) { rules_[name] = body; }
  std::string gbnf() const {
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  const Json* root_ = nullptr;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;  // $ref -> rule name
  int depth_ = 0;

  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw Error("JSON schema at " + path + ": " + what);
  }

  std::string prim(const std::string& name) {
    if (rules_.count(name)) return name;
    rules_[name] = primitives().at(name);
    auto d = primitive_deps().find(name);
    if (d != primitive_deps().end())
      for (const auto& dep : d->second) prim(dep);
    return name;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    std::string name = sanitize(hint);
    for (int k = 1; rules_.count(name) && rules_[name] != body; ++k) name = sanitize(hint) + "-" + std::to_string(k);
    rules_[name] = body;
    return name;
  }

  std::string literal_value(const Json& v) { return gbnf_literal(v.dump(-1, ' ', false)) + " " + prim("space"); }

  static std::optional<uint64_t> get_count(const Json& s, const char* key, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) fail(path, std::string("'") + key + "' must be a non-negative integer");
    return it->get<uint64_t>();
  }

  const Json& resolve(const std::string& ref, const std::string& path) {
    if (ref == "#") return *root_;
    if (ref.rfind("#/", 0) != 0) fail(path, "only local $ref ('#/$defs/...') is supported, not '" + ref + "'");
    const Json* cur = root_;
    size_t i = 2;
    while (i <= ref.size()) {
      size_t j = ref.find('/', i);
      if (j == std::string::npos) j = ref.size();
      std::string part = ref.substr(i, j - i);
      for (size_t k; (k = part.find("~1")) != std::string::npos;) part.replace(k, 2, "/");
      for (size_t k; (k = part.find("~0")) != std::string::npos;) part.replace(k, 2, "~");
      if (!cur->is_object() || !cur->contains(part)) fail(path, "$ref '" + ref + "' does not resolve");
      cur = &(*cur)[part];
      i = j + 1;
    }
    return *cur;
  }

  std::string visit(const Json& s, const std::string& name, const std::string& path);
  std::string visit_typed(const Json& s, const std::string& type, const std::string& name, const std::string& path);
  std::string visit_object(const Json& s, const std::string& name, const std::string& path);
  std::string visit_array(const Json& s, const std::string& name, const std::string& path);
  std::string visit_string(const Json& s, const std::string& name, const std::string& path);
  std::string visit_number(const Json& s, bool integer, const std::string& name, const std::string& path);
  Json merge_all_of(const Json& s, const std::string& path);
};

std::string Converter::visit(const Json& s, const std::string& name, const std::string& path) {
  if (++depth_ > 200) fail(path, "nested too deeply");
  struct Leave {
    int& d;
    ~Leave() { d--; }
  } leave{depth_};
  if (s.is_boolean()) {
    if (!s.get<bool>()) fail(path, "the schema 'false' matches nothing");
    return prim("value");
  }
  if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
  for (const auto& [k, v] : s.items())
    if (!supported().count(k) && !annotations().count(k)) fail(path, "unsupported keyword '" + k + "'");

  if (s.contains("nullable") && s["nullable"] == true) {
    Json rest = s;
    rest.erase("nullable");
    return add_rule(name, visit(rest, name + "-value", path) + " | " + prim("null"));
  }
  if (auto it = s.find("$ref"); it != s.end()) {
    if (!it->is_string()) fail(path, "'$ref' must be a string");
    const std::string ref = it->get<std::string>();
    auto known = refs_.find(ref);
    if (known != refs_.end()) return known->second;
    // Name the rule before visiting, so recursive schemas refer to it.
    const std::string rule = add_rule(name + "-ref-" + ref.substr(ref.rfind('/') + 1), gbnf_literal(name + ref));
    refs_[ref] = rule;
    rules_[rule] = visit(resolve(ref, path), rule + "-body", ref);
    return rule;
  }
  if (auto it = s.find("const"); it != s.end()) return add_rule(name, literal_value(*it));
  if (auto it = s.find("enum"); it != s.end()) {
    if (!it->is_array() || it->empty()) fail(path, "'enum' must be a non-empty array");
    std::string body;
    for (const auto& v : *it) body += (body.empty() ? "" : " | ") + literal_value(v);
    return add_rule(name, body);
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (auto it = s.find(key); it != s.end()) {
      if (!it->is_array() || it->empty()) fail(path, std::string("'") + key + "' must be a non-empty array");
      std::string body;
      for (size_t i = 0; i < it->size(); ++i)
        body += (i ? " | " : "") + visit((*it)[i], name + "-" + std::to_string(i), path + "/" + key + "/" + std::to_string(i));
      return add_rule(name, body);
    }
  }
  if (s.contains("allOf")) return visit(merge_all_of(s, path), name, path);

  auto t = s.find("type");
  if (t != s.end() && t->is_array()) {
    if (t->empty()) fail(path, "'type' must not be an empty list");
    std::string body;
    for (const auto& one : *t) {
      if (!one.is_string()) fail(path, "'type' entries must be strings");
      body += (body.empty() ? "" : " | ") + visit_typed(s, one.get<std::string>(), name + "-" + one.get<std::string>(), path);
    }
    return add_rule(name, body);
  }
  if (t != s.end() && !t->is_string()) fail(path, "'type' must be a string or a list of strings");
  std::string type = t != s.end() ? t->get<std::string>() : "";
  if (type.empty()) {
    if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) type = "array";
    else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") || s.contains("format")) type = "string";
    else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) type = "number";
    else type = "object";  // llama.cpp reads {} (and properties alone) as an object
  }
  return visit_typed(s, type, name, path);
}

std::string Converter::visit_typed(const Json& s, const std::string& type, const std::string& name, const std::string& path) {
  if (type == "object") return visit_object(s, name, path);
  if (type == "array") return visit_array(s, name, path);
  if (type == "string") return visit_string(s, name, path);
  if (type == "number" || type == "integer") return visit_number(s, type == "integer", name, path);
  if (type == "boolean") return prim("boolean");
  if (type == "null") return prim("null");
  fail(path, "unknown type '" + type + "'");
}

Json Converter::merge_all_of(const Json& s, const std::string& path) {
  const Json& all = s["allOf"];
  if (!all.is_array() || all.empty()) fail(path, "'allOf' must be a non-empty array");
  Json merged = s;
  merged.erase("allOf");
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string sub_path = path + "/allOf/" + std::to_string(i);
    const Json* sub = &all[i];
    if (sub->is_object() && sub->contains("$ref")) sub = &resolve((*sub)["$ref"].get<std::string>(), sub_path);
    if (!sub->is_object()) fail(sub_path, "allOf entries must be object schemas");
    for (const auto& [k, v] : sub->items()) {
      if (k == "properties") {
        for (const auto& [pk, pv] : v.items()) merged["properties"][pk] = pv;
      } else if (k == "required") {
        for (const auto& r : v) merged["required"].push_back(r);
      } else if (k == "type" && merged.contains("type") && merged["type"] != v) {
        fail(sub_path, "allOf of different types is not supported");
      } else if (annotations().count(k) || k == "type" || k == "additionalProperties") {
        if (!merged.contains(k)) merged[k] = v;
      } else {
        fail(sub_path, "allOf is only supported for object schemas (properties, required), not '" + k + "'");
      }
    }
  }
  return merged;
}

std::string Converter::visit_object(const Json& s, const std::string& name, const std::string& path) {
  const std::string sp = prim("space");
  Json props = s.value("properties", Json::object());
  if (!props.is_object()) fail(path, "'properties' must be an object");
  std::set<std::string> required;
  if (auto it = s.find("required"); it != s.end()) {
    if (!it->is_array()) fail(path, "'required' must be an array of strings");
    for (const auto& r : *it) {
      if (!r.is_string()) fail(path, "'required' must be an array of strings");
      if (!props.contains(r.get<std::string>()))
        fail(path, "required property '" + r.get<std::string>() + "' is not in 'properties'");
      required.insert(r.get<std::string>());
    }
  }
  std::string extra_kv;  // a key-value pair beyond `properties`, if allowed
  if (auto it = s.find("additionalProperties"); it != s.end() && !(it->is_boolean() && !it->get<bool>())) {
    const std::string value = it->is_boolean() ? prim("value") : visit(*it, name + "-additional", path + "/additionalProperties");
    extra_kv = add_rule(name + "-additional-kv", prim("string") + " \":\" " + sp + " " + value);
  } else if (!s.contains("properties") && it == s.end()) {
    return prim("object");  // no properties named, none forbidden: any object
  }
  std::vector<std::string> kv;
  std::vector<bool> req;
  for (const auto& [key, sub] : props.items()) {
    const std::string value = visit(sub, name + "-" + key, path + "/properties/" + key);
    kv.push_back(add_rule(name + "-" + key + "-kv",
                          gbnf_literal(Json(key).dump(-1, ' ', false)) + " " + sp + " \":\" " + sp + " " + value));
    req.push_back(required.count(key) > 0);
  }
  // tail[i]: what may follow once something has been written, from
  // property i on (in the schema's order), then any extra pairs.
  const size_t n = kv.size();
  std::vector<std::string> tail(n + 1);
  tail[n] = extra_kv.empty() ? "" : "(\",\" " + sp + " " + extra_kv + ")*";
  for (size_t i = n; i-- > 0;) {
    std::string item = "\",\" " + sp + " " + kv[i];
    std::string body = req[i] ? item : "(" + item + ")?";
    if (!tail[i + 1].empty()) body += " " + tail[i + 1];
    tail[i] = add_rule(name + "-tail-" + std::to_string(i), body);
  }
  std::vector<std::string> heads;
  bool all_optional = true;
  for (size_t j = 0; j < n; ++j) {
    heads.push_back(kv[j] + (tail[j + 1].empty() ? "" : " " + tail[j + 1]));
    if (req[j]) {
      all_optional = false;
      break;
    }
  }
  if (all_optional && !extra_kv.empty()) heads.push_back(extra_kv + " " + tail[n]);
  std::string inner;
  for (size_t i = 0; i < heads.size(); ++i) inner += (i ? " | " : "") + heads[i];
  std::string body = "\"{\" " + sp + " ";
  if (!inner.empty()) body += "(" + inner + ")" + (all_optional ? "?" : "") + " ";
  return add_rule(name, body + "\"}\" " + sp);
}

std::string Converter::visit_array(const Json& s, const std::string& name, const std::string& path) {
  const std::string sp = prim("space");
  std::vector<std::string> prefix;
  const Json* items = nullptr;
  const Json* pre = s.contains("prefixItems") ? &s["prefixItems"] : nullptr;
  if (auto it = s.find("items"); it != s.end()) {
    if (it->is_array()) pre = &*it;  // the older tuple form
    else items = &*it;
  }
  if (pre) {
    if (!pre->is_array()) fail(path, "'prefixItems' must be an array");
    for (size_t i = 0; i < pre->size(); ++i)
      prefix.push_back(visit((*pre)[i], name + "-" + std::to_string(i), path + "/prefixItems/" + std::to_string(i)));
  }
  const uint64_t min = get_count(s, "minItems", path).value_or(0);
  const std::optional<uint64_t> max = get_count(s, "maxItems", path);
  if (max && *max < min) fail(path, "'maxItems' is below 'minItems'");
  const bool more = pre ? (items && !(items->is_boolean() && !items->get<bool>())) : true;
  if (max && *max < prefix.size()) fail(path, "'maxItems' is below the number of 'prefixItems'");
  if (!more && min > prefix.size()) fail(path, "'minItems' exceeds 'prefixItems' and no more items are allowed");
  const std::string item = !more ? "" : (items ? visit(*items, name + "-item", path + "/items") : prim("value"));

  std::string body = "\"[\" " + sp;
  for (size_t i = 0; i < prefix.size(); ++i) body += (i ? " \",\" " + sp + " " : " ") + prefix[i];
  if (more) {
    const uint64_t lo = min > prefix.size() ? min - prefix.size() : 0;
    const std::optional<uint64_t> hi = max ? std::optional<uint64_t>(*max - prefix.size()) : std::nullopt;
    if (!hi || *hi > 0) {
      const std::string next = "\",\" " + sp + " " + item;
      if (!prefix.empty()) {
        body += " (" + next + "){" + std::to_string(lo) + "," + (hi ? std::to_string(*hi) : "") + "}";
      } else {
        // first item without a comma, the rest with one
        std::string rest = "(" + next + "){" + std::to_string(lo > 0 ? lo - 1 : 0) + "," + (hi ? std::to_string(*hi - 1) : "") + "}";
        body += " (" + item + " " + rest + ")" + (lo == 0 ? "?" : "");
      }
    }
  }
  return add_rule(name, body + " \"]\" " + sp);
}

std::string Converter::visit_string(const Json& s, const std::string& name, const std::string& path) {
  const std::optional<uint64_t> lo = get_count(s, "minLength", path), hi = get_count(s, "maxLength", path);
  if (lo && hi && *hi < *lo) fail(path, "'maxLength' is below 'minLength'");
  if (auto f = s.find("format"); f != s.end()) {
    if (!f->is_string()) fail(path, "'format' must be a string");
    const std::string fmt = f->get<std::string>();
    if (lo || hi || s.contains("pattern")) fail(path, "'format' combined with lengths or a pattern is not supported");
    if (fmt == "date" || fmt == "time" || fmt == "date-time" || fmt == "uuid") return prim(fmt + "-string");
    fail(path, "string format '" + fmt + "' is not supported (date, time, date-time, uuid are)");
  }
  if (auto p = s.find("pattern"); p != s.end()) {
    if (!p->is_string()) fail(path, "'pattern' must be a string");
    if (lo || hi) fail(path, "'pattern' combined with 'minLength'/'maxLength' is not supported");
    try {
      return add_rule(name, "\"\\\"\" " + regex_to_gbnf(p->get<std::string>(), prim("char")) + " \"\\\"\" " + prim("space"));
    } catch (const Error& e) {
      fail(path, e.what());
    }
  }
  if (!lo && !hi) return prim("string");
  const std::string rep = "{" + std::to_string(lo.value_or(0)) + "," + (hi ? std::to_string(*hi) : "") + "}";
  return add_rule(name, "\"\\\"\" " + prim("char") + rep + " \"\\\"\" " + prim("space"));
}

std::string Converter::visit_number(const Json& s, bool integer, const std::string& name, const std::string& path) {
  // Bounds: minimum/maximum, exclusiveMinimum/Maximum as numbers (draft 6+)
  // or as booleans modifying minimum/maximum (draft 4).
  std::optional<double> lo, hi;
  bool lo_excl = false, hi_excl = false;
  auto num = [&](const char* key) -> std::optional<double> {
    auto it = s.find(key);
    if (it == s.end() || it->is_boolean()) return std::nullopt;
    if (!it->is_number()) fail(path, std::string("'") + key + "' must be a number");
    return it->get<double>();
  };
  lo = num("minimum"), hi = num("maximum");
  if (auto v = num("exclusiveMinimum")) lo = v, lo_excl = true;
  if (auto v = num("exclusiveMaximum")) hi = v, hi_excl = true;
  if (s.value("exclusiveMinimum", Json()) == true) lo_excl = true;
  if (s.value("exclusiveMaximum", Json()) == true) hi_excl = true;
  if (!lo && !hi) return prim(integer ? "integer" : "number");
  const double kLimit = 9e15;
  if ((lo && std::fabs(*lo) > kLimit) || (hi && std::fabs(*hi) > kLimit)) fail(path, "numeric bounds beyond 9e15 are not supported");
  if (integer) {
    std::optional<int64_t> a, b;
    if (lo) a = (int64_t)(lo_excl ? std::floor(*lo) + 1 : std::ceil(*lo));
    if (hi) b = (int64_t)(hi_excl ? std::ceil(*hi) - 1 : std::floor(*hi));
    if (a && b && *a > *b) fail(path, "no integer satisfies the bounds");
    return add_rule(name, integer_range_gbnf(a, b) + " " + prim("space"));
  }
  // Real numbers: integral bounds, inclusive. x = i.f; the integral part
  // ranges over the bounds and the fraction is free except at a bound.
  if (lo_excl || hi_excl || (lo && *lo != std::floor(*lo)) || (hi && *hi != std::floor(*hi)))
    fail(path, "bounds on 'number' must be inclusive whole numbers (use 'integer' or round them)");
  std::optional<int64_t> a = lo ? std::optional<int64_t>((int64_t)*lo) : std::nullopt;
  std::optional<int64_t> b = hi ? std::optional<int64_t>((int64_t)*hi) : std::nullopt;
  if (a && b && *a > *b) fail(path, "'minimum' is above 'maximum'");
  const std::string frac = prim("fraction");
  // Magnitudes m in [from, to] (to open: unbounded), written i.f.
  auto magnitude = [&](int64_t from, std::optional<int64_t> to) {
    if (!to) return integer_range_gbnf(from, std::nullopt) + " " + frac + "?";
    std::string out;
    if (from <= *to - 1) out = integer_range_gbnf(from, *to - 1) + " " + frac + "? | ";
    return "(" + out + gbnf_literal(std::to_string(*to)) + " (\".\" \"0\"{1,16})?)";
  };
  std::vector<std::string> alts;
  if (!b || *b >= 0) alts.push_back("(" + magnitude(a && *a > 0 ? *a : 0, b) + ")");
  if (!a || *a < 0) alts.push_back("\"-\" (" + magnitude(b && *b < 0 ? -*b : 0, a ? std::optional<int64_t>(-*a) : std::nullopt) + ")");
  std::string body = "(";
  for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
  return add_rule(name, body + ") " + prim("space"));
}

}  // namespace detail

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  JsonGrammarBuilder b;
  b.add_rule("root", b.add(schema, "root-value"));
  return b.gbnf();
}

JsonGrammarBuilder::JsonGrammarBuilder() : c_(std::make_unique<detail::Converter>()) {}
JsonGrammarBuilder::~JsonGrammarBuilder() = default;
std::string JsonGrammarBuilder::add(const nlohmann::ordered_json& schema, const std::string& name_hint) {
  return c_->add(schema, name_hint);
}
void JsonGrammarBuilder::add_rule(const std::string& name, const std::string& body) { c_->set_rule(name, body); }
std::string JsonGrammarBuilder::gbnf() const { return c_->gbnf(); }

std::string json_object_gbnf() { return json_schema_to_gbnf(nlohmann::ordered_json{{"type", "object"}}); }

}  // namespace oscar::grammar
