#include "server/chat_prompt.h"

#include "server/server_context.h"

namespace oscar::server {

ChatPrompt build_chat_prompt(const ServerContext& ctx, const ChatRequest& cr) {
  ChatPrompt p;
  p.text = ctx.render_chat(cr);
  p.tokens = ctx.tokenize_prompt(p.text, /*add_special=*/false);
  const tok::Vocab& vocab = ctx.model().tokenizer->vocab();
  if (vocab.add_bos() && vocab.bos() != tok::kNoToken && p.tokens.front() != vocab.bos())
    p.tokens.insert(p.tokens.begin(), vocab.bos());
  p.format = ctx.model().output_format;
  if (ctx.settings().reasoning_format == "none") p.format.reasoning.reset();
  if (!cr.parse_tool_calls) p.format.tools.reset();
  return p;
}

}  // namespace oscar::server
