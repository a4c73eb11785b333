// Reads a Hugging Face tokenizer.json without building a JSON tree for its
// two big members: model.vocab (text -> id) and model.merges go straight
// into vectors, everything else becomes an ordinary nlohmann::json tree.
// A 33 MB tokenizer.json (Gemma) parses several times faster this way than
// as a full document, which matters for oscar-mkmodel and the tests.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oscar::tok {

struct HfTokenizerJson {
  nlohmann::json doc;  // the document minus model.vocab and model.merges
  bool has_vocab = false;
  std::vector<std::pair<std::string, int64_t>> vocab;  // in file order
  bool has_merges = false;
  std::vector<std::pair<std::string, std::string>> merges;  // rank order
};

// Throws oscar::Error (naming `name`) on malformed JSON or a vocab / merges
// member of an unexpected shape.
HfTokenizerJson read_hf_tokenizer_json(std::string_view text, const std::string& name);

}  // namespace oscar::tok
