#include "default_vocab.h"

#include <string>

namespace oscar::mkmodel {

namespace {

// GPT-2's reversible byte -> printable code point map: printable Latin-1
// bytes map to themselves, the rest to 256 + n in byte order.
std::string byte_token(int b) {
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  int cp = b;
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
      if (!p) ++n;
    }
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += (char)cp;
  } else {
    s += (char)(0xC0 | (cp >> 6));
    s += (char)(0x80 | (cp & 0x3F));
  }
  return s;
}

// A handful of frequent English merges so the BPE path is exercised
// ("Ġ" is the byte-level form of a space).
const char* const kMerges[][2] = {
    {"Ġ", "t"}, {"h", "e"}, {"i", "n"}, {"Ġ", "a"}, {"e", "r"}, {"o", "n"}, {"Ġt", "he"},
    {"r", "e"}, {"a", "t"}, {"o", "r"}, {"e", "n"}, {"Ġ", "s"}, {"e", "s"}, {"i", "s"},
    {"Ġ", "o"}, {"a", "n"}, {"Ġ", "w"}, {"Ġ", "c"}, {"i", "t"}, {"Ġ", "b"}, {"in", "g"},
    {"Ġ", "f"}, {"Ġ", "p"}, {"a", "l"}, {"Ġ", "m"}, {"Ġa", "n"}, {"Ġan", "d"}, {"Ġ", "i"},
};

}  // namespace

std::vector<gguf::KeyValue> default_vocab(const ModelSpec& spec) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_token(b));
    types.push_back(1);  // normal
  }
  std::vector<std::string> merges;
  for (const auto& m : kMerges) {
    merges.push_back(std::string(m[0]) + " " + m[1]);
    tokens.push_back(std::string(m[0]) + m[1]);
    types.push_back(1);
  }
  const int first_special = (int)tokens.size();
  const char* const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>",
                                  "<think>",       "</think>",     "<tool_call>",
                                  "</tool_call>",  "<|begin_of_text|>"};
  for (const char* s : specials) {
    tokens.push_back(s);
    const std::string x(s);
    types.push_back(x.rfind("<|", 0) == 0 ? 3 : 4);  // control vs user-defined
  }
  const int endoftext = first_special, im_end = first_special + 2, begin = first_special + 7;

  const bool llama = spec.arch == "llama";
  std::vector<gguf::KeyValue> kv;
  kv.push_back({"tokenizer.ggml.model", gguf::Value::str("gpt2")});
  kv.push_back({"tokenizer.ggml.pre", gguf::Value::str(llama ? "llama-bpe" : "qwen2")});
  kv.push_back({"tokenizer.ggml.tokens", gguf::Value::string_array(tokens)});
  kv.push_back({"tokenizer.ggml.token_type", gguf::Value::i32_array(types)});
  kv.push_back({"tokenizer.ggml.merges", gguf::Value::string_array(merges)});
  kv.push_back({"tokenizer.ggml.bos_token_id", gguf::Value::u32((uint32_t)(llama ? begin : endoftext))});
  kv.push_back({"tokenizer.ggml.eos_token_id", gguf::Value::u32((uint32_t)im_end)});
  kv.push_back({"tokenizer.ggml.padding_token_id", gguf::Value::u32((uint32_t)endoftext)});
  kv.push_back({"tokenizer.ggml.add_bos_token", gguf::Value::boolean(llama)});
  // ChatML, the format of the Qwen family.
  kv.push_back({"tokenizer.chat_template",
                gguf::Value::str("{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + "
                                 "message.content + '<|im_end|>' + '\\n' }}{%- endfor %}"
                                 "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")});
  return kv;
}

}  // namespace oscar::mkmodel
