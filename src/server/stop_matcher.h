// Stop strings over streamed text. Text that could still turn out to be the
// start of a stop string is held back, so a client never sees any part of a
// stop string, even when it arrives split across tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oscar::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends generated text; returns the text that is safe to emit now. Once
  // a stop string is complete, returns the text before it and stopped()
  // turns true (later pushes return "").
  std::string push(std::string_view text);
  // End of generation without a stop string: everything still held back.
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string found

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

// Length of the longest suffix of `text` that is a proper prefix of `word`.
size_t partial_suffix_match(std::string_view text, std::string_view word);

}  // namespace oscar::server
