#include "grammar/vocab_bytes.h"

namespace oscar::grammar {

std::shared_ptr<const TokenTrie> make_token_trie(const tok::Tokenizer& tok) {
  const tok::Vocab& v = tok.vocab();
  std::vector<std::string> bytes(v.n_tokens());
  for (size_t id = 0; id < v.n_tokens(); ++id) {
    // Control tokens (BOS, <|im_start|>, ...) print nothing here, so the
    // grammar never allows them; end-of-generation ones are handled apart.
    bytes[id] = tok.token_to_piece((tok::TokenId)id, /*render_special=*/false);
  }
  return std::make_shared<const TokenTrie>(std::move(bytes), v.eog_ids());
}

}  // namespace oscar::grammar
