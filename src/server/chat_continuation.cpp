#include "server/chat_continuation.h"

namespace oscar::server {

std::string continuation_prompt(const std::string& rendered, const std::string& final_content,
                                const std::function<std::string()>& render_without_final) {
  const size_t at = final_content.empty() ? std::string::npos : rendered.rfind(final_content);
  if (at != std::string::npos) return rendered.substr(0, at + final_content.size());
  return render_without_final() + final_content;
}

}  // namespace oscar::server
