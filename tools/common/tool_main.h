// Every tool's entry point: runs the tool and turns an exception that
// escapes it into one line "NAME: error: WHAT" on stderr and exit status 1,
// so bad input never ends in an abort or a stack trace.
#pragma once

#include <cstdio>
#include <exception>

namespace oscar::tools {

inline int tool_main(const char* name, int argc, char** argv, int (*run)(int, char**)) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace oscar::tools
