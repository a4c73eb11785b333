#include "tokenizer/hf_tokenizer_json.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <map>
#include <optional>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "tokenizer/hf_json_reader.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace oscar::tok {

namespace {

using json = nlohmann::json;
using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json parse(std::string_view text, const std::string& name) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw Error("'" + name + "' is not valid JSON: " + e.what());
  }
}

// Calls `f` on `node` and, for "Sequence" containers, on every member.
template <class F>
void visit_components(const json& node, F&& f) {
  if (!node.is_object()) return;
  f(node);
  for (const char* list : {"normalizers", "pretokenizers", "decoders", "processors"}) {
    if (node.contains(list) && node[list].is_array())
      for (const auto& child : node[list]) visit_components(child, f);
  }
}

bool has_component(const json& node, const std::string& type) {
  bool found = false;
  visit_components(node, [&](const json& c) {
    if (c.value("type", "") == type) found = true;
  });
  return found;
}

std::string pattern_text(const json& c) {
  if (!c.contains("pattern") || !c["pattern"].is_object()) return "";
  const json& p = c["pattern"];
  if (p.contains("Regex") && p["Regex"].is_string()) return p["Regex"].get<std::string>();
  if (p.contains("String") && p["String"].is_string()) return p["String"].get<std::string>();
  return "";
}

// Token texts that llama.cpp's converter treats as control tokens even when
// tokenizer.json does not mark them special.
bool looks_special(const std::string& t) {
  auto starts = [&](std::string_view p) { return t.size() >= p.size() && t.compare(0, p.size(), p) == 0; };
  auto ends = [&](std::string_view s) {
    return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0;
  };
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (starts("<|") && ends("|>") && t.size() >= 4) return true;
  if (starts("<\xEF\xBD\x9C") && ends("\xEF\xBD\x9C>")) return true;  // <｜...｜>
  if (starts("<unused") && ends(">")) return true;
  return false;
}

bool is_byte_token(const std::string& t) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit((unsigned char)t[3]) &&
         std::isxdigit((unsigned char)t[4]);
}

// Merges are written "left right"; a space inside a part becomes U+0120,
// as gguf-py does, so the single separating space stays unique.
std::string encode_merge_part(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == ' ')
      append_utf8(o, 0x120);
    else
      o += c;
  }
  return o;
}

// The content of a tokenizer_config "*_token" entry (string or {content}).
std::string config_token(const json& cfg, const std::string& key) {
  if (!cfg.is_object() || !cfg.contains(key)) return "";
  const json& e = cfg[key];
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && e.contains("content") && e["content"].is_string()) return e["content"].get<std::string>();
  return "";
}

}  // namespace

namespace {
std::vector<KeyValue> convert_hf_text(std::string_view tokenizer_json, std::string_view config_json,
                                      const std::string& name);
}  // namespace

std::vector<KeyValue> vocab_metadata_from_hf_text(std::string_view tokenizer_json, std::string_view config_json,
                                                  const std::string& name) {
  // A field of the wrong JSON type (say "type": [] in a normalizer) makes
  // nlohmann throw from deep inside the conversion; it is the file's fault,
  // so it is reported as one (found by tokenizer_json_fuzz).
  try {
    return convert_hf_text(tokenizer_json, config_json, name);
  } catch (const json::exception& e) {
    throw Error("'" + name + "': a field has the wrong JSON type (" + e.what() + ")");
  }
}

namespace {

// The GGUF tokenizer family of a BPE tokenizer.json: byte-level (gpt2, with
// the pre-tokenizer regex's name) or SentencePiece-style (llama when a space
// is prepended, else gemma4).
struct HfFamily {
  std::string ggml_model, ggml_pre;
  bool byte_level = false;
  bool prepend = false;  // SentencePiece-style: a meta space goes before the text
};

HfFamily detect_family(const json& normalizer, const json& pre, const json& decoder, const std::string& name) {
  HfFamily f;
  f.byte_level = has_component(pre, "ByteLevel") || has_component(decoder, "ByteLevel");
  bool spaces_to_meta = has_component(pre, "Metaspace") || has_component(decoder, "Metaspace");
  visit_components(normalizer, [&](const json& c) {
    const std::string t = c.value("type", "");
    if (t == "Replace" && pattern_text(c) == " " && c.value("content", "") == std::string(kSpmSpace))
      spaces_to_meta = true;
    if (t == "Prepend" && c.value("prepend", "") == std::string(kSpmSpace)) f.prepend = true;
  });
  visit_components(pre, [&](const json& c) {
    if (c.value("type", "") == "Metaspace") {
      const std::string scheme = c.value("prepend_scheme", c.value("add_prefix_space", true) ? "always" : "never");
      if (scheme != "never") f.prepend = true;
    }
  });
  if (f.byte_level) {
    f.ggml_model = "gpt2";
    std::string regex;
    bool bytelevel_regex = false;
    visit_components(pre, [&](const json& c) {
      const std::string t = c.value("type", "");
      if (t == "Split" && regex.empty()) regex = pattern_text(c);
      if (t == "ByteLevel" && c.value("use_regex", true)) bytelevel_regex = true;
    });
    if (!regex.empty()) {
      f.ggml_pre = pre_name_for_regex(regex);
      if (f.ggml_pre.empty())
        throw Error("'" + name + "': pre-tokenizer regex is not one this tokenizer supports: " + regex);
    } else if (bytelevel_regex) {
      f.ggml_pre = "gpt-2";
    } else {
      throw Error("'" + name + "': byte-level tokenizer without a pre-tokenizer regex is not supported");
    }
    if (has_component(normalizer, "NFC") && f.ggml_pre != "qwen2")
      throw Error("'" + name + "': NFC normalisation is only supported with the qwen2 pre-tokenizer");
  } else if (spaces_to_meta) {
    f.ggml_model = f.prepend ? "llama" : "gemma4";
    if (f.prepend) f.ggml_pre = "default";
  } else {
    throw Error("'" + name + "': unsupported BPE tokenizer (neither byte-level nor SentencePiece-style)");
  }
  return f;
}

// The GGUF token arrays: one entry per id in [0, n), n past the largest
// vocab or added id; ids in neither are "[PAD<id>]" of type Unused.
struct HfTokens {
  std::vector<Value> tokens, types;  // (n) text, TokenType
  std::vector<float> scores;         // (n) 0, or -1000 for added tokens
  std::unordered_map<std::string, int32_t> text_to_id;
  std::vector<std::pair<std::string, int64_t>> added_order;  // added tokens in file order, for content -> id
};

HfTokens read_tokens(HfTokenizerJson& parsed, bool spm_like, const std::string& name) {
  const json& j = parsed.doc;
  std::map<int64_t, std::string> by_id;
  for (auto& [text, id] : parsed.vocab) {
    if (id < 0 || id > INT32_MAX) throw Error("'" + name + "': vocab id out of range for '" + text + "'");
    by_id[id] = std::move(text);
  }
  struct Added {
    std::string content;
    bool special;
  };
  std::map<int64_t, Added> added;
  HfTokens t;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["id"].is_number_integer() ||
          !a["content"].is_string())
        throw Error("'" + name + "': malformed entry in added_tokens");
      const int64_t id = a["id"].get<int64_t>();
      if (id < 0 || id > INT32_MAX) throw Error("'" + name + "': added token id out of range");
      added[id] = {a["content"].get<std::string>(), a.value("special", false)};
      t.added_order.emplace_back(a["content"].get<std::string>(), id);
    }
  }
  int64_t n = 0;
  if (!by_id.empty()) n = std::max(n, by_id.rbegin()->first + 1);
  if (!added.empty()) n = std::max(n, added.rbegin()->first + 1);
  if (n == 0) throw Error("'" + name + "': the vocabulary is empty");

  t.tokens.reserve(n);
  t.types.reserve(n);
  t.scores.reserve(n);
  for (int64_t id = 0; id < n; ++id) {
    std::string text;
    TokenType type = TokenType::Normal;
    float score = 0.0f;
    if (auto a = added.find(id); a != added.end()) {
      text = a->second.content;
      type = (a->second.special || looks_special(text)) ? TokenType::Control : TokenType::UserDefined;
      score = -1000.0f;
    } else if (auto v = by_id.find(id); v != by_id.end()) {
      text = v->second;
      if (spm_like && is_byte_token(text)) type = TokenType::Byte;
    } else {
      text = "[PAD" + std::to_string(id) + "]";
      type = TokenType::Unused;
    }
    t.text_to_id[text] = (int32_t)id;
    t.tokens.push_back(Value::str(std::move(text)));
    t.types.push_back(Value::i32((int32_t)type));
    t.scores.push_back(score);
  }
  return t;
}

// SentencePiece merges by score: give each token the rank of the first merge
// producing it, earlier merges scoring higher, so the score order reproduces
// the merge order.
void scores_from_merges(const std::vector<std::pair<std::string, std::string>>& merges, HfTokens& t) {
  std::vector<bool> seen(t.scores.size(), false);
  for (size_t i = 0; i < merges.size(); ++i) {
    auto it = t.text_to_id.find(merges[i].first + merges[i].second);
    if (it == t.text_to_id.end() || seen[it->second]) continue;
    seen[it->second] = true;
    t.scores[it->second] = -(float)(i + 1);
  }
}

// The special token ids (bos, eos, unk, ...) and whether BOS / EOS are added,
// from tokenizer_config.json and the post-processor.
struct HfSpecials {
  std::map<std::string, int64_t> ids;
  std::optional<bool> add_bos, add_eos;
};

HfSpecials read_specials(const json& cfg, const json& model, const json& post, const HfTokens& t,
                         const std::string& ggml_model) {
  auto added_id = [&](const std::string& content) -> int64_t {
    if (content.empty()) return -1;
    for (const auto& [c, id] : t.added_order)
      if (c == content) return id;
    return -1;
  };
  HfSpecials s;
  std::map<std::string, int64_t>& ids = s.ids;
  for (const char* typ : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"}) {
    const int64_t id = added_id(config_token(cfg, std::string(typ) + "_token"));
    if (id >= 0) ids[typ] = id;
  }
  if (!ids.count("unk") && model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = t.text_to_id.find(model["unk_token"].get<std::string>());
    if (it != t.text_to_id.end()) ids["unk"] = it->second;
  }
  // A TemplateProcessing post-processor that wraps single sequences in
  // special tokens means BOS / EOS are added.
  if (post.is_object() && post.value("type", "") == "TemplateProcessing" && post.contains("single") &&
      post["single"].is_array() && post["single"].size() > 1) {
    auto special_id = [&](const json& item) -> int64_t {
      if (!item.contains("SpecialToken")) return -1;
      const std::string tok = item["SpecialToken"].value("id", "");
      if (post.contains("special_tokens") && post["special_tokens"].contains(tok)) {
        const json& ids_arr = post["special_tokens"][tok]["ids"];
        if (ids_arr.is_array() && ids_arr.size() == 1 && ids_arr[0].is_number_integer()) return ids_arr[0].get<int64_t>();
      }
      return added_id(tok);
    };
    const int64_t first = special_id(post["single"].front());
    const int64_t last = special_id(post["single"].back());
    if (first >= 0) {
      if (!ids.count("bos") && cfg.empty()) ids["bos"] = first;
      s.add_bos = ids.count("bos") && ids["bos"] == first;
    }
    if (last >= 0) {
      if (!ids.count("eos") && cfg.empty()) ids["eos"] = last;
      s.add_eos = ids.count("eos") && ids["eos"] == last;
    }
  }
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) s.add_bos = cfg["add_bos_token"].get<bool>();
  if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) s.add_eos = cfg["add_eos_token"].get<bool>();
  if (ggml_model == "gemma4") s.add_bos = true;  // llama.cpp's Gemma 4 converter always sets it
  return s;
}

void push_specials(const HfSpecials& s, std::vector<KeyValue>& kv) {
  static const std::map<std::string, const char*> kIdKeys = {
      {"bos", "tokenizer.ggml.bos_token_id"},      {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"},  {"sep", "tokenizer.ggml.seperator_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"},  {"cls", "tokenizer.ggml.cls_token_id"},
      {"mask", "tokenizer.ggml.mask_token_id"},
  };
  for (const char* typ : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"})
    if (s.ids.count(typ)) kv.push_back({kIdKeys.at(typ), Value::u32((uint32_t)s.ids.at(typ))});
  const bool has_bos = s.ids.count("bos") > 0, has_eos = s.ids.count("eos") > 0;
  if (s.add_bos && (!*s.add_bos || has_bos)) kv.push_back({"tokenizer.ggml.add_bos_token", Value::boolean(*s.add_bos)});
  if (s.add_eos && (!*s.add_eos || has_eos)) kv.push_back({"tokenizer.ggml.add_eos_token", Value::boolean(*s.add_eos)});
}

// The chat template(s) of tokenizer_config.json: a string, or named
// templates where "default" is the main one and others get a suffix.
void push_chat_templates(const json& cfg, std::vector<KeyValue>& kv) {
  if (!cfg.contains("chat_template")) return;
  const json& ct = cfg["chat_template"];
  if (ct.is_string()) {
    kv.push_back({"tokenizer.chat_template", Value::str(ct.get<std::string>())});
  } else if (ct.is_array()) {
    for (const auto& t : ct) {
      if (!t.is_object() || !t.contains("name") || !t.contains("template")) continue;
      const std::string tname = t["name"].get<std::string>();
      const std::string key = tname == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + tname;
      kv.push_back({key, Value::str(t["template"].get<std::string>())});
    }
  }
}

std::vector<KeyValue> convert_hf_text(std::string_view tokenizer_json, std::string_view config_json,
                                      const std::string& name) {
  HfTokenizerJson parsed = read_hf_tokenizer_json(tokenizer_json, name);
  const json& j = parsed.doc;
  const json cfg = config_json.empty() ? json::object() : parse(config_json, "tokenizer_config.json");
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw Error("'" + name + "' has no \"model\" object");
  const json& model = j["model"];
  const std::string mtype = model.value("type", "BPE");
  if (mtype != "BPE")
    throw Error("'" + name + "': tokenizer model type '" + mtype + "' is not supported (only BPE)");
  if (!parsed.has_vocab) throw Error("'" + name + "': model.vocab is missing or not an object");

  const HfFamily family = detect_family(j.value("normalizer", json()), j.value("pre_tokenizer", json()),
                                        j.value("decoder", json()), name);
  const bool spm_like = !family.byte_level;
  HfTokens t = read_tokens(parsed, spm_like, name);
  std::vector<Value> merge_values;
  merge_values.reserve(parsed.merges.size());
  for (const auto& [l, r] : parsed.merges)
    merge_values.push_back(Value::str(encode_merge_part(l) + " " + encode_merge_part(r)));
  if (family.ggml_model == "llama") scores_from_merges(parsed.merges, t);
  std::vector<Value> scores;
  scores.reserve(t.scores.size());
  for (float f : t.scores) scores.push_back(Value::f32(f));

  std::vector<KeyValue> kv;
  kv.push_back({"tokenizer.ggml.model", Value::str(family.ggml_model)});
  if (!family.ggml_pre.empty()) kv.push_back({"tokenizer.ggml.pre", Value::str(family.ggml_pre)});
  kv.push_back({"tokenizer.ggml.tokens", Value::array(ValueType::STRING, std::move(t.tokens))});
  if (spm_like) kv.push_back({"tokenizer.ggml.scores", Value::array(ValueType::FLOAT32, std::move(scores))});
  kv.push_back({"tokenizer.ggml.token_type", Value::array(ValueType::INT32, std::move(t.types))});
  if (family.ggml_model != "llama")
    kv.push_back({"tokenizer.ggml.merges", Value::array(ValueType::STRING, std::move(merge_values))});
  push_specials(read_specials(cfg, model, j.value("post_processor", json()), t, family.ggml_model), kv);
  if (spm_like) kv.push_back({"tokenizer.ggml.add_space_prefix", Value::boolean(family.prepend)});
  push_chat_templates(cfg, kv);
  return kv;
}
}  // namespace

std::vector<KeyValue> vocab_metadata_from_hf(const std::string& tokenizer_json_path,
                                             const std::string& tokenizer_config_path_or_empty) {
  const std::string tj = read_file(tokenizer_json_path);
  std::string cfg;
  if (!tokenizer_config_path_or_empty.empty()) cfg = read_file(tokenizer_config_path_or_empty);
  auto kv = vocab_metadata_from_hf_text(tj, cfg, tokenizer_json_path);
  // Newer checkpoints keep the template in chat_template.jinja beside the
  // config instead of inside it.
  const bool has_template = std::any_of(kv.begin(), kv.end(), [](const KeyValue& k) { return k.key == "tokenizer.chat_template"; });
  if (!has_template) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(tokenizer_config_path_or_empty.empty() ? tokenizer_json_path
                                                                         : tokenizer_config_path_or_empty)
                             .parent_path();
    const fs::path jinja = dir / "chat_template.jinja";
    std::error_code ec;
    if (fs::is_regular_file(jinja, ec)) kv.push_back({"tokenizer.chat_template", Value::str(read_file(jinja.string()))});
  }
  return kv;
}

}  // namespace oscar::tok
