#include "server/infill_prompt.h"

#include <algorithm>

#include "server/api_error.h"

namespace oscar::server {

namespace {

std::vector<int32_t> plain_tokens(const tok::Tokenizer& t, const std::string& text) {
  return t.tokenize(text, /*add_special=*/false, /*parse_special=*/false);
}

// A string, or an array mixing strings and token ids (llama-server's "mixed" input).
std::vector<int32_t> mixed_tokens(const Json& v, const std::string& field, const tok::Tokenizer& t) {
  if (v.is_string()) return plain_tokens(t, v.get<std::string>());
  if (!v.is_array()) throw bad_request("'" + field + "' must be a string or an array of strings and token ids");
  std::vector<int32_t> out;
  const int n_vocab = (int)t.vocab().n_tokens();
  for (const auto& x : v) {
    if (x.is_string()) {
      const auto part = plain_tokens(t, x.get<std::string>());
      out.insert(out.end(), part.begin(), part.end());
    } else if (x.is_number_integer() && x.get<long long>() >= 0 && x.get<long long>() < n_vocab) {
      out.push_back((int32_t)x.get<long long>());
    } else {
      throw bad_request("'" + field + "' must hold strings and token ids in [0, " + std::to_string(n_vocab) + ")");
    }
  }
  return out;
}

}  // namespace

InfillInput parse_infill_input(const Json& body, const tok::Tokenizer& tokenizer) {
  InfillInput in;
  for (const char* key : {"input_prefix", "input_suffix"})
    if (!body.contains(key) || body[key].is_null()) throw bad_request(std::string("'") + key + "' is required");
  in.prefix = mixed_tokens(body["input_prefix"], "input_prefix", tokenizer);
  in.suffix = mixed_tokens(body["input_suffix"], "input_suffix", tokenizer);
  in.prompt = get_string(body, "prompt", "");
  if (body.contains("input_extra") && !body["input_extra"].is_null()) {
    const Json& extra = body["input_extra"];
    if (!extra.is_array()) throw bad_request("'input_extra' must be an array of {\"filename\": string, \"text\": string}");
    for (size_t i = 0; i < extra.size(); ++i) {
      const std::string at = "input_extra[" + std::to_string(i) + "]";
      if (!extra[i].is_object() || !extra[i].contains("text") || !extra[i]["text"].is_string())
        throw bad_request("'" + at + "' must be an object with a string 'text'");
      in.extra.push_back({get_string(extra[i], "filename", "tmp"), extra[i]["text"].get<std::string>()});
    }
  }
  return in;
}

void check_fim_support(const tok::Vocab& vocab) {
  std::string missing;
  if (vocab.fim().pre == tok::kNoToken) missing += " prefix token is missing.";
  if (vocab.fim().suf == tok::kNoToken) missing += " suffix token is missing.";
  if (vocab.fim().mid == tok::kNoToken) missing += " middle token is missing.";
  if (!missing.empty())
    throw bad_request("Infill is not supported by this model (its GGUF names no tokenizer.ggml.fim_* tokens):" +
                      missing);
}

std::vector<int32_t> assemble_infill_prompt(const tok::Tokenizer& tokenizer, const InfillInput& in,
                                            const InfillLimits& lim) {
  const tok::Vocab& vocab = tokenizer.vocab();
  const tok::FimTokens& fim = vocab.fim();
  auto append = [](std::vector<int32_t>& to, const std::vector<int32_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };

  // Repository-level context: the other files, oldest first.
  std::vector<int32_t> extra;
  if (fim.rep != tok::kNoToken) {
    extra.push_back(fim.rep);
    append(extra, plain_tokens(tokenizer, "myproject\n"));
  }
  for (const auto& chunk : in.extra) {
    if (fim.sep != tok::kNoToken) {
      extra.push_back(fim.sep);
      append(extra, plain_tokens(tokenizer, chunk.filename + "\n"));
    } else {
      append(extra, plain_tokens(tokenizer, "\n\n--- snippet ---\n\n"));
    }
    append(extra, plain_tokens(tokenizer, chunk.text));
  }
  if (fim.sep != tok::kNoToken) {
    extra.push_back(fim.sep);
    append(extra, plain_tokens(tokenizer, "filename\n"));
  }

  const std::vector<int32_t> prompt = tokenizer.tokenize(in.prompt, /*add_special=*/false, /*parse_special=*/true);
  const int n_prefix = std::min<int>((int)in.prefix.size(), 3 * (lim.n_batch / 4));
  const int n_suffix =
      std::min<int>((int)in.suffix.size(), std::max<int>(0, lim.n_batch / 4 - (2 + (int)prompt.size())));
  const int n_extra = std::min<int>(std::max<int>(0, lim.n_ctx - lim.n_batch - 2 * lim.n_predict), (int)extra.size());

  std::vector<int32_t> pre = {fim.pre};  // the prefix's tail, then the prompt
  pre.insert(pre.end(), in.prefix.end() - n_prefix, in.prefix.end());
  append(pre, prompt);
  std::vector<int32_t> suf = {fim.suf};  // the suffix's head
  suf.insert(suf.end(), in.suffix.begin(), in.suffix.begin() + n_suffix);

  std::vector<int32_t> out(extra.end() - n_extra, extra.end());
  if (vocab.add_bos() && vocab.bos() != tok::kNoToken) out.push_back(vocab.bos());
  append(out, lim.spm ? suf : pre);
  append(out, lim.spm ? pre : suf);
  out.push_back(fim.mid);
  return out;
}

}  // namespace oscar::server
