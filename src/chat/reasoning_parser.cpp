#include "chat/reasoning_parser.h"

#include "chat/stream_util.h"

namespace oscar::chat {

bool prompt_opens_reasoning(std::string_view prompt, const ReasoningFormat& fmt) {
  const size_t s = prompt.rfind(fmt.start);
  if (s == std::string_view::npos) return false;
  const size_t e = prompt.rfind(fmt.end);
  return e == std::string_view::npos || e < s;
}

ReasoningParser::ReasoningParser(ReasoningFormat fmt, bool starts_in_reasoning)
    : fmt_(std::move(fmt)),
      in_reasoning_(starts_in_reasoning),
      may_reopen_(starts_in_reasoning),
      skip_reasoning_space_(starts_in_reasoning) {}

ReasoningDelta ReasoningParser::feed(std::string_view piece) {
  ReasoningDelta out;
  buf_.append(piece);
  process(false, out);
  return out;
}

ReasoningDelta ReasoningParser::finish() {
  ReasoningDelta out;
  process(true, out);
  return out;
}

void ReasoningParser::emit_reasoning(std::string_view text, bool closing, ReasoningDelta& out) {
  if (skip_reasoning_space_) {
    text.remove_prefix(leading_space(text));
    if (text.empty() && !closing) return;
    skip_reasoning_space_ = false;
  }
  if (closing) {
    // The block ends here: its trailing whitespace is dropped.
    text.remove_suffix(trailing_space(text));
    if (!text.empty()) out.reasoning += pending_space_;
    pending_space_.clear();
    out.reasoning.append(text);
    return;
  }
  const size_t ws = trailing_space(text);
  if (ws == text.size()) {
    pending_space_.append(text);
    return;
  }
  out.reasoning += pending_space_;
  pending_space_.assign(text.substr(text.size() - ws));
  out.reasoning.append(text.substr(0, text.size() - ws));
}

void ReasoningParser::emit_content(std::string_view text, ReasoningDelta& out) {
  if (skip_content_space_) {
    text.remove_prefix(leading_space(text));
    if (text.empty()) return;
    skip_content_space_ = false;
  }
  out.content.append(text);
}

void ReasoningParser::process(bool final, ReasoningDelta& out) {
  for (;;) {
    if (in_reasoning_) {
      if (may_reopen_) {
        // Models sometimes repeat the start marker the prompt already wrote.
        const std::string_view rest = std::string_view(buf_).substr(leading_space(buf_));
        if (rest.substr(0, fmt_.start.size()) == fmt_.start) {
          buf_.erase(0, buf_.size() - rest.size() + fmt_.start.size());
          may_reopen_ = false;
          continue;
        }
        if (!final && std::string_view(fmt_.start).substr(0, rest.size()) == rest) return;  // undecided
        may_reopen_ = false;
      }
      const size_t pos = buf_.find(fmt_.end);
      if (pos != std::string::npos) {
        emit_reasoning(std::string_view(buf_).substr(0, pos), true, out);
        buf_.erase(0, pos + fmt_.end.size());
        in_reasoning_ = false;
        skip_content_space_ = true;
        continue;
      }
      const size_t keep = final ? 0 : std::max(partial_marker_suffix(buf_, {fmt_.end}), incomplete_utf8_suffix(buf_));
      emit_reasoning(std::string_view(buf_).substr(0, buf_.size() - keep), final, out);
      buf_.erase(0, buf_.size() - keep);
      return;
    }
    const size_t pos = buf_.find(fmt_.start);
    if (pos != std::string::npos) {
      emit_content(std::string_view(buf_).substr(0, pos), out);
      buf_.erase(0, pos + fmt_.start.size());
      in_reasoning_ = true;
      skip_reasoning_space_ = true;
      continue;
    }
    const size_t keep = final ? 0 : std::max(partial_marker_suffix(buf_, {fmt_.start}), incomplete_utf8_suffix(buf_));
    emit_content(std::string_view(buf_).substr(0, buf_.size() - keep), out);
    buf_.erase(0, buf_.size() - keep);
    return;
  }
}

}  // namespace oscar::chat
