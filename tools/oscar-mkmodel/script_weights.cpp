#include "script_weights.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace oscar::mkmodel {

namespace {

// The hidden state entering the final norm is e_t (token t's one-hot row)
// plus, once the marker is in context, kMarkerGain * e_M. Output row u reads
// 1 from e_t when u is t's plain successor, kAltWeight from e_t when u is
// t's after-marker successor, and 1 from e_M when u starts any after-marker
// branch. Without the marker the plain successor wins 1 : 0.5; with it the
// branch wins 0.5 + 0.75 : 1, and for every other token its successor still
// beats the branches 1 : 0.75. The final RMSNorm only rescales (by about
// sqrt(n_embd)), so the logit margins are several units.
constexpr float kAltWeight = 0.5f;
constexpr float kMarkerGain = 0.75f;
// Q/K norm weight: the marker's attention score is kQkNorm^2 * sqrt(head_dim)
// (about 50), against 0 for every other token, so one marker anywhere in
// thousands of tokens takes all the attention.
constexpr float kQkNorm = 3.0f;

gguf::Value* find(std::vector<gguf::KeyValue>& kv, const std::string& key) {
  for (auto& p : kv)
    if (p.key == key) return &p.value;
  return nullptr;
}

std::vector<gguf::Value>& items(gguf::Value* v, const std::string& key) {
  if (!v || !v->as_array()) throw Error("--script: the vocabulary has no " + key + " array");
  return std::get<std::shared_ptr<gguf::Array>>(v->v)->items;
}

std::vector<std::vector<std::string>> read_chains(const nlohmann::json& doc, const char* key) {
  std::vector<std::vector<std::string>> out;
  if (!doc.contains(key)) return out;
  const auto& chains = doc[key];
  if (!chains.is_array()) throw Error(std::string("--script: '") + key + "' must be an array of chains");
  for (const auto& c : chains) {
    if (!c.is_array() || c.size() < 2)
      throw Error(std::string("--script: each chain of '") + key + "' must be an array of at least two pieces");
    std::vector<std::string> pieces;
    for (const auto& p : c) {
      if (!p.is_string() || p.get<std::string>().empty())
        throw Error(std::string("--script: the pieces of '") + key + "' must be non-empty strings");
      pieces.push_back(p.get<std::string>());
    }
    out.push_back(std::move(pieces));
  }
  return out;
}

std::string shown(const std::string& piece) {
  return nlohmann::json(piece).dump();  // quoted, with \n escaped
}

}  // namespace

Script load_script(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("--script: cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw Error("--script: " + path + " is not a JSON object");
  for (const auto& [k, v] : doc.items())
    if (k != "marker" && k != "chains" && k != "chains_after_marker")
      throw Error("--script: unknown key '" + k + "' (marker, chains, chains_after_marker)");
  Script s;
  if (doc.contains("marker")) {
    if (!doc["marker"].is_string() || doc["marker"].get<std::string>().empty())
      throw Error("--script: 'marker' must be a non-empty string");
    s.marker = doc["marker"].get<std::string>();
  }
  s.chains = read_chains(doc, "chains");
  s.after_marker = read_chains(doc, "chains_after_marker");
  if (!s.after_marker.empty() && s.marker.empty()) throw Error("--script: 'chains_after_marker' needs a 'marker'");
  if (s.chains.empty() && s.after_marker.empty()) throw Error("--script: no chains");
  return s;
}

ScriptTokens add_script_tokens(const Script& script, std::vector<gguf::KeyValue>& vocab) {
  const gguf::Value* model = find(vocab, "tokenizer.ggml.model");
  if (!model || !model->as_string() || *model->as_string() != "gpt2")
    throw Error("--script needs a byte-level BPE (gpt2) vocabulary");
  auto& tokens = items(find(vocab, "tokenizer.ggml.tokens"), "tokenizer.ggml.tokens");
  auto& types = items(find(vocab, "tokenizer.ggml.token_type"), "tokenizer.ggml.token_type");
  gguf::Value* scores = find(vocab, "tokenizer.ggml.scores");
  const gguf::Value* eos = find(vocab, "tokenizer.ggml.eos_token_id");
  if (!eos || !eos->as_uint()) throw Error("--script: the vocabulary has no EOS token");

  ScriptTokens st;
  st.eos = (int)*eos->as_uint();
  // Control and user-defined tokens are stored as written, the others in
  // GPT-2's byte alphabet.
  auto lookup = [&](const std::string& piece) {
    const std::string encoded = tok::bytes_to_gpt2(piece);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto t = types[i].as_int().value_or(1);
      const bool raw = t == 3 || t == 4;
      if (*tokens[i].as_string() == (raw ? piece : encoded)) return (int)i;
    }
    return -1;
  };
  auto resolve = [&](const std::string& piece, bool user_defined) {
    if (const int id = lookup(piece); id >= 0) return id;
    tokens.push_back(gguf::Value::str(user_defined ? piece : tok::bytes_to_gpt2(piece)));
    types.push_back(gguf::Value::i32(user_defined ? 4 : 1));
    if (scores && scores->as_array()) items(scores, "tokenizer.ggml.scores").push_back(gguf::Value::f32(0.0f));
    return (int)tokens.size() - 1;
  };
  auto link = [&](std::map<int, int>& next, const std::vector<std::string>& chain) {
    // The trigger must come out of the tokenizer as one token: a missing one
    // becomes user-defined, matched wherever its text appears.
    int prev = resolve(chain[0], true);
    for (size_t i = 1; i < chain.size(); ++i) {
      const int id = resolve(chain[i], false);
      const auto [it, fresh] = next.emplace(prev, id);
      if (!fresh && it->second != id)
        throw Error("--script: " + shown(chain[i - 1]) + " would be followed by two different tokens (" +
                    shown(chain[i]) + " and another); give each chain its own pieces");
      prev = id;
    }
  };
  if (!script.marker.empty()) st.marker = resolve(script.marker, true);
  for (const auto& c : script.chains) link(st.next, c);
  for (const auto& c : script.after_marker) link(st.next_after, c);
  return st;
}

int script_embd(int n_vocab) { return (n_vocab + 1 + 31) / 32 * 32; }

void apply_script(const ScriptTokens& st, const ModelSpec& s, std::vector<TensorPlan>& plan) {
  if (s.arch != "qwen3") throw Error("--script builds qwen3 models (--arch qwen3)");
  if (s.tied_output) throw Error("--script needs an output matrix of its own (no --tied)");
  const int V = s.n_vocab, E = s.n_embd, hd = s.head_dim, M = V;  // M: the "marker seen" dimension
  if (E < script_embd(V)) throw Error("--script: n_embd must be at least " + std::to_string(script_embd(V)));

  // Plain successor of every token (EOS when not scripted), and the tokens
  // whose successor changes once the marker is in context.
  std::vector<int> next((size_t)V, st.eos);
  for (const auto& [t, u] : st.next_after) next[(size_t)t] = u;
  for (const auto& [t, u] : st.next) next[(size_t)t] = u;
  std::map<int, int> branch;
  std::set<int> branch_heads;
  for (const auto& [t, u] : st.next_after)
    if (u != next[(size_t)t]) {
      branch[t] = u;
      branch_heads.insert(u);
    }
  for (const auto& [t, u] : branch)
    if (branch_heads.count(next[(size_t)t]))
      throw Error("--script: token " + std::to_string(t) +
                  " switches branches on the marker, but its plain successor also starts a branch");

  for (TensorPlan& t : plan) {
    const uint64_t cols = t.shape[0], rows = t.shape.size() > 1 ? t.shape[1] : 1;
    const std::string& n = t.name;
    auto at = [&](uint64_t r, uint64_t c) -> float& { return t.values[(size_t)(r * cols + c)]; };
    const bool is_norm = n.size() > 11 && n.compare(n.size() - 11, 11, "norm.weight") == 0;
    const bool qk_norm = n.find("attn_q_norm") != std::string::npos || n.find("attn_k_norm") != std::string::npos;
    // Everything not set below is zero (so FFNs and later layers add nothing)
    // or, for norms, one.
    t.values.assign((size_t)(rows * cols), is_norm ? (qk_norm ? kQkNorm : 1.0f) : 0.0f);
    if (n == "token_embd.weight") {
      for (int v = 0; v < V; ++v) at((uint64_t)v, (uint64_t)v) = 1.0f;
    } else if (n == "output.weight") {
      for (int v = 0; v < V; ++v) at((uint64_t)next[(size_t)v], (uint64_t)v) = 1.0f;
      for (const auto& [v, u] : branch) at((uint64_t)u, (uint64_t)v) = kAltWeight;
      for (int u : branch_heads) at((uint64_t)u, (uint64_t)M) = 1.0f;
    } else if (st.marker >= 0 && n.rfind("blk.0.", 0) == 0) {
      // Head 0 only, in its last dimension: the slowest RoPE pair (base^-(hd-2)/hd
      // rad per position, 2e-6 for 1e6 and 32), so scores do not depend on distance.
      const uint64_t d = (uint64_t)hd - 1;
      if (n == "blk.0.attn_q.weight") {
        for (int v = 0; v < V; ++v) at(d, (uint64_t)v) = 1.0f;  // every token asks the same
      } else if (n == "blk.0.attn_k.weight") {
        at(d, (uint64_t)st.marker) = 1.0f;  // only the marker answers; other keys are 0
      } else if (n == "blk.0.attn_v.weight") {
        at(0, (uint64_t)st.marker) = 1.0f / std::sqrt((float)E);  // attn_norm scaled it by sqrt(E)
      } else if (n == "blk.0.attn_output.weight") {
        at((uint64_t)M, 0) = kMarkerGain;
      }
    }
  }
}

}  // namespace oscar::mkmodel
