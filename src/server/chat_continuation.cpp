#include "server/chat_continuation.h"

namespace oscar::server {

std::string continuation_prompt(const std::string& rendered, const std::string& final_content,
                                const std::function<std::string()>& render_without_final) {
  const size_t at = final_content.empty() ? std::string::npos : rendered.rfind(final_content);
  if (at != std::string::npos) return rendered.substr(0, at + final_content.size());
  return render_without_final() + final_content;
}

std::string chat_prompt(const ChatRequest& r, const std::function<std::string(const ChatRequest&)>& render) {
  if (!r.continue_final) return render(r);
  const Json& content = r.messages.back()["content"];
  return continuation_prompt(render(r), content.is_string() ? content.get<std::string>() : "", [&] {
    ChatRequest before = r;
    before.messages.erase(before.messages.size() - 1);
    before.add_generation_prompt = true;
    return render(before);
  });
}

}  // namespace oscar::server
