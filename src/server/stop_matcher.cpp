#include "server/stop_matcher.h"

#include <algorithm>

namespace oscar::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

size_t partial_suffix_match(std::string_view text, std::string_view word) {
  const size_t max_len = std::min(text.size(), word.size() - (word.empty() ? 0 : 1));
  for (size_t len = max_len; len > 0; --len)
    if (text.substr(text.size() - len) == word.substr(0, len)) return len;
  return 0;
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) {
    std::string out;
    out.swap(held_);
    return out;
  }
  // The earliest complete stop string wins; ties go to the longer one.
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    if (at != std::string::npos && (at < best || (at == best && s.size() > matched_.size()))) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  size_t keep = 0;
  for (const auto& s : stops_) keep = std::max(keep, partial_suffix_match(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(held_);
  return out;
}

}  // namespace oscar::server
