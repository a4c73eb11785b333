// oscar-tokenize: prints the tokens of a text, like llama.cpp's
// llama-tokenize.
//
//   oscar-tokenize -m MODEL.gguf (-p TEXT | -f FILE | --stdin) [--ids]
//                  [--no-bos] [--no-parse-special] [--show-count]
//   oscar-tokenize --tokenizer-json tokenizer.json [--tokenizer-config F] ...
//
// Default output is one line per token, "<id> -> '<piece>'"; --ids prints a
// Python-style list "[1, 2, 3]".
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using namespace oscar;

const char* kUsage =
    "usage: oscar-tokenize (-m MODEL.gguf | --tokenizer-json PATH [--tokenizer-config PATH])\n"
    "                      (-p TEXT | -f FILE | --stdin) [options]\n"
    "\n"
    "  -m, --model PATH          GGUF file whose tokenizer.ggml.* metadata to use\n"
    "  --tokenizer-json PATH     Hugging Face tokenizer.json instead of a model\n"
    "  --tokenizer-config PATH   its tokenizer_config.json (default: the one beside it, if any)\n"
    "  -p, --prompt TEXT         text to tokenize\n"
    "  -f, --file FILE           read the text from FILE (exact bytes)\n"
    "  --stdin                   read the text from standard input\n"
    "  --ids                     print only the ids, as [1, 2, 3]\n"
    "  --no-bos                  do not add BOS/EOS even if the vocabulary asks for them\n"
    "  --no-parse-special        treat control tokens written in the text as plain text\n"
    "  --show-count              print the number of tokens at the end\n"
    "  -h, --help                this help\n";

struct Options {
  std::string model, tokenizer_json, tokenizer_config, prompt, file;
  bool have_prompt = false, use_stdin = false, ids = false, no_bos = false, parse_special = true,
       show_count = false;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("flag " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-m" || a == "--model")
      o.model = value();
    else if (a == "--tokenizer-json")
      o.tokenizer_json = value();
    else if (a == "--tokenizer-config")
      o.tokenizer_config = value();
    else if (a == "-p" || a == "--prompt") {
      o.prompt = value();
      o.have_prompt = true;
    } else if (a == "-f" || a == "--file")
      o.file = value();
    else if (a == "--stdin")
      o.use_stdin = true;
    else if (a == "--ids")
      o.ids = true;
    else if (a == "--no-bos")
      o.no_bos = true;
    else if (a == "--no-parse-special")
      o.parse_special = false;
    else if (a == "--show-count")
      o.show_count = true;
    else if (a == "--log-disable")
      ;  // accepted for llama-tokenize compatibility; nothing is logged anyway
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else
      throw Error("unknown flag '" + a + "' (see --help)");
  }
  if (o.model.empty() == o.tokenizer_json.empty())
    throw Error("give exactly one of -m MODEL.gguf and --tokenizer-json PATH");
  if ((int)o.have_prompt + (int)!o.file.empty() + (int)o.use_stdin != 1)
    throw Error("give exactly one of -p TEXT, -f FILE and --stdin");
  return o;
}

// Pieces that are not valid UTF-8 on their own (part of a character split
// across tokens) are shown byte by byte, like <0xE2>.
std::string printable(const std::string& piece) {
  if (tok::is_valid_utf8(piece)) return piece;
  std::string out;
  char buf[8];
  for (unsigned char c : piece) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", c);
    out += buf;
  }
  return out;
}

int run(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  std::vector<gguf::KeyValue> meta;
  if (!o.model.empty()) {
    meta = gguf::GgufFile::open(o.model).metadata();
  } else {
    std::string cfg = o.tokenizer_config;
    if (cfg.empty()) {
      const auto beside = std::filesystem::path(o.tokenizer_json).parent_path() / "tokenizer_config.json";
      if (std::filesystem::exists(beside)) cfg = beside.string();
    }
    meta = tok::vocab_metadata_from_hf(o.tokenizer_json, cfg);
  }
  const tok::Tokenizer tokenizer = tok::Tokenizer::from_metadata(meta);

  std::string text;
  if (o.have_prompt)
    text = o.prompt;
  else if (!o.file.empty())
    text = read_file(o.file);
  else {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  }

  const auto ids = tokenizer.tokenize(text, !o.no_bos, o.parse_special);
  if (o.ids) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
    line += "]";
    std::puts(line.c_str());
  } else {
    for (tok::TokenId id : ids)
      std::printf("%6d -> '%s'\n", id, printable(tokenizer.display_piece(id)).c_str());
  }
  if (o.show_count) std::printf("Total number of tokens: %zu\n", ids.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oscar-tokenize: %s\n", e.what());
    return 1;
  }
}
