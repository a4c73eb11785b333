// The bridge from a tokenizer to the grammar machinery: every token's output
// bytes (byte-level BPE decoded from its GPT-2 alphabet, SentencePiece ▁ as a
// space and <0xNN> byte-fallback tokens as the raw byte) in a TokenTrie.
#pragma once

#include <memory>

#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace oscar::grammar {

std::shared_ptr<const TokenTrie> make_token_trie(const tok::Tokenizer& tok);

}  // namespace oscar::grammar
