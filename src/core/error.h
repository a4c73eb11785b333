// Errors: every failure the user can cause (bad file, bad flag, bad request)
// is reported by throwing oscar::Error with a one-line message that names the
// problem and where it is. Nothing on such a path calls abort().
#pragma once

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

}  // namespace oscar
