#include "chat/tool_call_parser.h"

#include "chat/json_io.h"
#include "chat/stream_util.h"

namespace oscar::chat {

using ojson = nlohmann::ordered_json;

namespace {

constexpr int kMaxDepth = 64;
constexpr std::string_view kGemmaQuote = "<|\"|>";

std::string_view trim(std::string_view s) {
  s.remove_prefix(leading_space(s));
  s.remove_suffix(trailing_space(s));
  return s;
}

// A scalar written without quotes: JSON if it parses as a number/bool/null,
// otherwise the text itself.
ojson scalar(std::string_view text) {
  const std::string_view t = trim(text);
  if (t == "None") return nullptr;
  if (t == "True") return true;
  if (t == "False") return false;
  ojson j = parse_json_bounded(t);
  if (!j.is_discarded() && !j.is_object() && !j.is_array()) return j;
  return std::string(text);
}

// Qwen3.5: <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>
bool parse_function_tag(std::string_view body, ToolCall* out) {
  constexpr std::string_view kFn = "<function=";
  if (body.substr(0, kFn.size()) != kFn) return false;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return false;
  out->name = std::string(trim(body.substr(kFn.size(), name_end - kFn.size())));
  out->arguments = ojson::object();
  size_t pos = name_end + 1;
  constexpr std::string_view kParam = "<parameter=";
  for (;;) {
    const size_t p = body.find(kParam, pos);
    if (p == std::string_view::npos) break;
    const size_t pend = body.find('>', p);
    if (pend == std::string_view::npos) return false;
    const std::string key(trim(body.substr(p + kParam.size(), pend - p - kParam.size())));
    const size_t close = body.find("</parameter>", pend);
    if (close == std::string_view::npos) return false;
    std::string_view value = body.substr(pend + 1, close - pend - 1);
    // The template writes "\n" + value + "\n" around each value.
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    ojson j = parse_json_bounded(value);
    out->arguments[key] = (!j.is_discarded() && (j.is_object() || j.is_array() || j.is_number() || j.is_boolean() || j.is_null()))
                              ? j
                              : ojson(std::string(value));
    pos = close + 12;
  }
  return !out->name.empty();
}

}  // namespace

bool parse_hermes_call(std::string_view body, ToolCall* out) {
  body = trim(body);
  if (parse_function_tag(body, out)) return true;
  ojson j = parse_json_bounded(body);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  out->name = j["name"].get<std::string>();
  ojson args = j.contains("arguments") ? j["arguments"] : (j.contains("parameters") ? j["parameters"] : ojson::object());
  if (args.is_string()) {
    // Some models write the arguments as a JSON string.
    ojson parsed = parse_json_bounded(args.get<std::string>());
    if (!parsed.is_discarded()) args = parsed;
  }
  out->arguments = args;
  return true;
}

bool parse_gemma4_value(std::string_view t, size_t* pos, ojson* out, int depth) {
  if (depth > kMaxDepth) return false;
  size_t& i = *pos;
  while (i < t.size() && (t[i] == ' ' || t[i] == '\n')) ++i;
  if (i >= t.size()) return false;
  if (t.substr(i, kGemmaQuote.size()) == kGemmaQuote) {
    const size_t e = t.find(kGemmaQuote, i + kGemmaQuote.size());
    if (e == std::string_view::npos) return false;
    *out = std::string(t.substr(i + kGemmaQuote.size(), e - i - kGemmaQuote.size()));
    i = e + kGemmaQuote.size();
    return true;
  }
  if (t[i] == '{') {
    ++i;
    *out = ojson::object();
    for (bool first = true;; first = false) {
      while (i < t.size() && (t[i] == ' ' || t[i] == '\n')) ++i;
      if (i < t.size() && t[i] == '}') {
        ++i;
        return true;
      }
      if (!first) {
        if (i >= t.size() || t[i] != ',') return false;
        ++i;
      }
      std::string key;
      if (t.substr(i, kGemmaQuote.size()) == kGemmaQuote) {
        ojson k;
        if (!parse_gemma4_value(t, &i, &k, depth + 1)) return false;
        key = k.get<std::string>();
      } else {
        const size_t colon = t.find(':', i);
        if (colon == std::string_view::npos) return false;
        key = std::string(trim(t.substr(i, colon - i)));
        i = colon;
      }
      if (i >= t.size() || t[i] != ':') return false;
      ++i;
      ojson v;
      if (!parse_gemma4_value(t, &i, &v, depth + 1)) return false;
      (*out)[key] = std::move(v);
    }
  }
  if (t[i] == '[') {
    ++i;
    *out = ojson::array();
    for (bool first = true;; first = false) {
      while (i < t.size() && (t[i] == ' ' || t[i] == '\n')) ++i;
      if (i < t.size() && t[i] == ']') {
        ++i;
        return true;
      }
      if (!first) {
        if (i >= t.size() || t[i] != ',') return false;
        ++i;
      }
      ojson v;
      if (!parse_gemma4_value(t, &i, &v, depth + 1)) return false;
      out->push_back(std::move(v));
    }
  }
  // A bare scalar runs to the next delimiter.
  const size_t e = t.find_first_of(",}]", i);
  const std::string_view text = t.substr(i, e == std::string_view::npos ? std::string_view::npos : e - i);
  if (trim(text).empty()) return false;
  *out = scalar(text);
  i = e == std::string_view::npos ? t.size() : e;
  return true;
}

bool parse_gemma4_call(std::string_view body, ToolCall* out) {
  body = trim(body);
  constexpr std::string_view kCall = "call:";
  if (body.substr(0, kCall.size()) != kCall) return false;
  const size_t brace = body.find('{');
  if (brace == std::string_view::npos) return false;
  out->name = std::string(trim(body.substr(kCall.size(), brace - kCall.size())));
  size_t pos = brace;
  ojson args;
  if (!parse_gemma4_value(body, &pos, &args) || !args.is_object()) return false;
  if (!trim(body.substr(pos)).empty()) return false;
  out->arguments = std::move(args);
  return !out->name.empty();
}

ToolCallParser::ToolCallParser(ToolCallFormat fmt) : fmt_(fmt) {
  if (fmt == ToolCallFormat::Gemma4) {
    start_ = "<|tool_call>";
    end_ = "<tool_call|>";
  } else {
    start_ = "<tool_call>";
    end_ = "</tool_call>";
  }
}

ToolCallDelta ToolCallParser::feed(std::string_view piece) {
  ToolCallDelta out;
  buf_.append(piece);
  process(false, out);
  return out;
}

ToolCallDelta ToolCallParser::finish() {
  ToolCallDelta out;
  process(true, out);
  if (in_call_) {
    out.content += start_ + buf_;  // unterminated call: give the text back
    buf_.clear();
    in_call_ = false;
  }
  return out;
}

void ToolCallParser::process(bool final, ToolCallDelta& out) {
  for (;;) {
    if (in_call_) {
      const size_t pos = buf_.find(end_);
      if (pos == std::string::npos) return;  // wait for the end marker
      const std::string_view body = std::string_view(buf_).substr(0, pos);
      ToolCall call;
      const bool ok = fmt_ == ToolCallFormat::Gemma4 ? parse_gemma4_call(body, &call) : parse_hermes_call(body, &call);
      if (ok)
        out.calls.push_back(std::move(call));
      else
        out.content += start_ + std::string(body) + end_;  // malformed: keep as text
      buf_.erase(0, pos + end_.size());
      in_call_ = false;
      continue;
    }
    const size_t pos = buf_.find(start_);
    if (pos != std::string::npos) {
      out.content.append(buf_, 0, pos);
      buf_.erase(0, pos + start_.size());
      in_call_ = true;
      continue;
    }
    const size_t keep = final ? 0 : std::max(partial_marker_suffix(buf_, {start_}), incomplete_utf8_suffix(buf_));
    out.content.append(buf_, 0, buf_.size() - keep);
    buf_.erase(0, buf_.size() - keep);
    return;
  }
}

}  // namespace oscar::chat
