// The build's identity, as llama-server reports its own ("b" + commit):
// system_fingerprint of OpenAI responses and build_info of /props.
#pragma once

namespace oscar::server {

// "b<short git hash>" of the source tree at configure time ("unknown"
// outside a git checkout).
const char* build_id();

}  // namespace oscar::server
