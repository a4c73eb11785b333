// Errors: every failure the user can cause (bad file, bad flag, bad request)
// is reported by throwing oscar::Error with a one-line message that names the
// problem and where it is. Nothing on such a path calls abort().
#pragma once

#include <concepts>
#include <stdexcept>
#include <string>

namespace oscar {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Checks a condition that depends on input; throws Error(msg) when false.
inline void require(bool ok, const std::string& msg) {
  if (!ok) throw Error(msg);
}

// The same with the message made only on failure, for checks that run per
// token or per matmul: composing a message with std::to_string on every call
// costs allocations on paths that are otherwise a few hundred nanoseconds.
template <std::invocable MakeMessage>
inline void require(bool ok, MakeMessage&& make_message) {
  if (!ok) throw Error(make_message());
}

}  // namespace oscar
