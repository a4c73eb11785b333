// oscar-cli's conversation mode: read a user turn from stdin, render the whole
// conversation with the chat template, evaluate only what is not already in
// the cache (the common prefix is kept), stream the reply, and split thinking
// from the answer per --reasoning-format.
#pragma once

#include <cstdio>

#include "engine.h"
#include "run_settings.h"
#include "runtime/forward.h"

namespace oscar::tools {

// Runs until end of input. Returns the process exit status.
int run_conversation(const RunSettings& s, Engine& engine, kv::KvCache& cache, runtime::Forward& fwd,
                     std::FILE* in, std::FILE* out);

}  // namespace oscar::tools
