#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <queue>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace oscar::tok {

// Byte trie over the texts of special and user-defined tokens, for
// leftmost-longest matching in raw text.
struct Tokenizer::Trie {
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    TokenId always = kNoToken;                      // user-defined token ending here
    TokenId special = kNoToken;                     // control/unknown token ending here
  };
  std::vector<Node> nodes{Node{}};

  void insert(std::string_view s, TokenId id, bool always) {
    int32_t cur = 0;
    for (char ch : s) {
      const uint8_t c = (uint8_t)ch;
      auto& nx = nodes[cur].next;
      auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(c, INT32_MIN));
      if (it != nx.end() && it->first == c) {
        cur = it->second;
      } else {
        const int32_t fresh = (int32_t)nodes.size();
        nx.insert(it, {c, fresh});
        nodes.emplace_back();
        cur = fresh;
      }
    }
    // With duplicate texts the later id wins, as in the text index.
    (always ? nodes[cur].always : nodes[cur].special) = id;
  }

  // Longest token starting at text[pos]; returns its length (0 if none).
  size_t match(std::string_view text, size_t pos, bool parse_special, TokenId& id) const {
    int32_t cur = 0;
    size_t best = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      const uint8_t c = (uint8_t)text[i];
      const auto& nx = nodes[cur].next;
      auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(c, INT32_MIN));
      if (it == nx.end() || it->first != c) break;
      cur = it->second;
      const Node& n = nodes[cur];
      if (n.always != kNoToken) {
        best = i + 1 - pos;
        id = n.always;
      } else if (parse_special && n.special != kNoToken) {
        best = i + 1 - pos;
        id = n.special;
      }
    }
    return best;
  }
};

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  if (vocab_.kind() == VocabKind::ByteBpe) {
    spec_ = pre_tokenizer_spec(vocab_.pre());
    splitter_ = RegexSplitter(spec_.regexes);
  }
  auto trie = std::make_shared<Trie>();
  for (TokenId id : vocab_.special_tokens())
    trie->insert(vocab_.text(id), id, vocab_.type(id) == TokenType::UserDefined);
  trie_ = std::move(trie);
}

std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t raw_start = 0, i = 0;
  while (i < text.size()) {
    TokenId id = kNoToken;
    const size_t len = trie_->match(text, i, parse_special, id);
    if (len == 0) {
      ++i;
      continue;
    }
    if (i > raw_start) out.push_back({text.substr(raw_start, i - raw_start), kNoToken});
    out.push_back({text.substr(i, len), id});
    i += len;
    raw_start = i;
  }
  if (raw_start < text.size()) out.push_back({text.substr(raw_start), kNoToken});
  return out;
}

std::vector<TokenId> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<TokenId> out;
  if (add_special && vocab_.add_bos()) out.push_back(vocab_.bos());
  // SentencePiece-style vocabularies put a space before the first text and
  // before text that follows a special token (llama.cpp's rule).
  bool prev_special = true;
  for (const Fragment& f : partition(text, parse_special)) {
    if (f.id != kNoToken) {
      out.push_back(f.id);
      prev_special = true;
      continue;
    }
    switch (vocab_.kind()) {
      case VocabKind::ByteBpe:
        encode_byte_bpe(f.text, out);
        break;
      case VocabKind::Spm:
      case VocabKind::GemmaBpe: {
        std::string t;
        if (vocab_.add_space_prefix() && prev_special) t = " ";
        t.append(f.text);
        const std::string esc = escape_spaces(t);
        if (vocab_.kind() == VocabKind::Spm)
          encode_spm(esc, out);
        else
          encode_gemma(esc, out);
        break;
      }
    }
    prev_special = false;
  }
  if (add_special && vocab_.add_eos()) out.push_back(vocab_.eos());
  return out;
}

void Tokenizer::push_bytes(std::string_view bytes, std::vector<TokenId>& out) const {
  for (char c : bytes) {
    TokenId id = vocab_.byte_token((uint8_t)c);
    if (id == kNoToken) id = vocab_.unk();
    if (id != kNoToken) out.push_back(id);
  }
}

void Tokenizer::bpe_word(const std::vector<std::string_view>& pieces, std::vector<TokenId>& out,
                         bool byte_fallback_hex) const {
  struct Sym {
    std::string_view text;
    TokenId id;
    int32_t prev, next;
  };
  const int32_t n = (int32_t)pieces.size();
  if (n == 0) return;
  std::vector<Sym> sym(n);
  for (int32_t i = 0; i < n; ++i) sym[i] = {pieces[i], vocab_.find(pieces[i]), i - 1, i + 1 < n ? i + 1 : -1};

  // Candidate merges, lowest rank first and leftmost among equal ranks.
  struct Cand {
    int32_t rank, left;
    TokenId result;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto consider = [&](int32_t l) {
    if (l < 0) return;
    const int32_t r = sym[l].next;
    if (r < 0 || sym[l].id == kNoToken || sym[r].id == kNoToken) return;
    if (const Vocab::Merge* m = vocab_.find_merge(sym[l].id, sym[r].id)) heap.push({m->rank, l, m->result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = sym[c.left];
    if (l.text.empty() || l.next < 0) continue;
    Sym& r = sym[l.next];
    // Stale entry: one side has changed since it was queued.
    const Vocab::Merge* m = vocab_.find_merge(l.id, r.id);
    if (!m || m->rank != c.rank) continue;
    l.text = std::string_view(l.text.data(), l.text.size() + r.text.size());
    l.id = c.result;
    r.text = {};
    l.next = r.next;
    if (l.next >= 0) sym[l.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].id != kNoToken) {
      out.push_back(sym[i].id);
    } else if (byte_fallback_hex) {
      push_bytes(sym[i].text, out);
    } else {
      // Byte-level: each character of the alphabet is a byte token.
      for (auto ch : utf8_chars(sym[i].text)) {
        const TokenId id = vocab_.find(ch);
        if (id != kNoToken)
          out.push_back(id);
        else if (vocab_.unk() != kNoToken)
          out.push_back(vocab_.unk());
      }
    }
  }
}

void Tokenizer::encode_byte_bpe(std::string_view text, std::vector<TokenId>& out) const {
  const std::string normalized = spec_.nfc ? nfc(text) : std::string(text);
  for (std::string_view word : splitter_.split(normalized)) {
    const std::string enc = bytes_to_gpt2(word);
    if (spec_.ignore_merges) {
      // Whole words that are tokens skip merging (Llama 3's ignore_merges).
      const TokenId id = vocab_.find(enc);
      if (id != kNoToken) {
        out.push_back(id);
        continue;
      }
    }
    bpe_word(utf8_chars(enc), out, false);
  }
}

void Tokenizer::encode_gemma(std::string_view text, std::vector<TokenId>& out) const {
  // Runs of newlines are split from the rest; a run that is a token is
  // emitted whole, everything else is merged by rank on code points.
  size_t i = 0;
  while (i < text.size()) {
    const bool nl = text[i] == '\n';
    size_t j = i;
    while (j < text.size() && (text[j] == '\n') == nl) ++j;
    const std::string_view run = text.substr(i, j - i);
    const TokenId whole = nl ? vocab_.find(run) : kNoToken;
    if (whole != kNoToken)
      out.push_back(whole);
    else
      bpe_word(utf8_chars(run), out, true);
    i = j;
  }
}

void Tokenizer::encode_spm(std::string_view text, std::vector<TokenId>& out) const {
  // SentencePiece BPE: repeatedly merge the adjacent pair whose merged text
  // is the highest-scoring token (leftmost on ties).
  struct Sym {
    const char* p;
    size_t n;
    int32_t prev, next;
  };
  std::vector<Sym> sym;
  for (auto ch : utf8_chars(text)) {
    const int32_t idx = (int32_t)sym.size();
    sym.push_back({ch.data(), ch.size(), idx - 1, -1});
    if (idx > 0) sym[idx - 1].next = idx;
  }
  if (sym.empty()) return;

  struct Bigram {
    float score;
    int32_t left, right;
    size_t size;
  };
  auto worse = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> heap(worse);
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const std::string_view s(sym[l].p, sym[l].n + sym[r].n);
    const TokenId id = vocab_.find(s);
    if (id == kNoToken) return;
    heap.push({vocab_.token(id).score, l, r, s.size()});
  };
  for (size_t i = 1; i < sym.size(); ++i) consider((int32_t)i - 1, (int32_t)i);

  while (!heap.empty()) {
    const Bigram b = heap.top();
    heap.pop();
    Sym& l = sym[b.left];
    Sym& r = sym[b.right];
    // Stale: either side was merged into something else meanwhile.
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    consider(l.prev, b.left);
    consider(b.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const std::string_view s(sym[i].p, sym[i].n);
    const TokenId id = vocab_.find(s);
    if (id != kNoToken)
      out.push_back(id);
    else
      push_bytes(s, out);  // byte fallback: <0xNN> per byte
  }
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  if (!vocab_.valid(id)) return {};
  const TokenData& t = vocab_.token(id);
  const bool spm_like = vocab_.kind() != VocabKind::ByteBpe;
  switch (t.type) {
    case TokenType::Control:
    case TokenType::Unknown:
      return render_special ? t.text : std::string();
    case TokenType::Unused:
      return {};
    case TokenType::UserDefined:
      // Stored as written; SentencePiece-style ones may spell spaces as ▁.
      return spm_like ? unescape_spaces(t.text) : t.text;
    case TokenType::Byte:
      if (spm_like && t.text.size() == 6 && t.text.compare(0, 3, "<0x") == 0) {
        return std::string(1, (char)std::stoi(t.text.substr(3, 2), nullptr, 16));
      }
      [[fallthrough]];
    default:
      return spm_like ? unescape_spaces(t.text) : gpt2_to_bytes(t.text);
  }
}

std::string Tokenizer::detokenize(std::span<const TokenId> ids, bool remove_special, bool render_special) const {
  if (remove_special) {
    if (!ids.empty() && vocab_.add_bos() && ids.front() == vocab_.bos()) ids = ids.subspan(1);
    if (!ids.empty() && vocab_.add_eos() && ids.back() == vocab_.eos()) ids = ids.first(ids.size() - 1);
  }
  std::string out;
  bool strip = vocab_.add_space_prefix();
  for (TokenId id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip && !piece.empty()) {
      // Undo the dummy-prefix space tokenize() added.
      if (piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

std::string StreamDetokenizer::push(TokenId id) {
  std::string piece = tok_.token_to_piece(id, render_special_);
  if (first_ && !piece.empty()) {
    if (tok_.vocab().add_space_prefix() && piece[0] == ' ') piece.erase(0, 1);
    first_ = false;
  }
  pending_ += piece;
  const size_t hold = utf8_incomplete_tail(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamDetokenizer::finish() {
  std::string rest = std::move(pending_);
  pending_.clear();
  return rest;
}

}  // namespace oscar::tok
