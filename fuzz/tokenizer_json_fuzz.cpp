// libFuzzer target for tokenizer.json conversion (oscar-mkmodel
// --tokenizer-json reads files from model repositories): any input must
// convert or be refused with oscar::Error.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "tokenizer/hf_tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)oscar::tok::vocab_metadata_from_hf_text(text, "");
  } catch (const oscar::Error&) {
  }
  return 0;
}
