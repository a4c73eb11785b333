// The variables llama-server gives every chat template beside the messages:
// today's date as `date_string` ("04 Dec 2026") and `datetime`
// ("Dec 04 2026") from the real clock (Llama 3.x templates print it in the
// system turn).
#pragma once

#include <ctime>

#include <nlohmann/json.hpp>

namespace oscar::chat {

// date_string and datetime for `now` (local time).
nlohmann::ordered_json date_variables(std::time_t now);

}  // namespace oscar::chat
