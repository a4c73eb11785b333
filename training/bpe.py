"""Byte-level BPE in the GPT-2 style: training, encoding, and the exact
pre-tokenizer our engine applies for tokenizer.ggml.pre = "gpt2".

Python's `re` lacks \\p{L}/\\p{N}, so the GPT-2 split regex
  's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
is written out as a scanner over unicodedata categories; \\s is Unicode
White_Space (what the engine matches after rewriting \\s).
"""
import heapq
import unicodedata
from collections import Counter, defaultdict

WHITE_SPACE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)}
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _cls(ch):
    """'W' white space, 'L' letter, 'N' number, 'O' anything else."""
    if ch in WHITE_SPACE:
        return "W"
    cat = unicodedata.category(ch)[0]
    if cat == "L":
        return "L"
    if cat == "N":
        return "N"
    return "O"


def pre_tokenize(text):
    """Splits text exactly like the GPT-2 regex (alternatives tried in order,
    each greedy); the pieces concatenate back to `text`."""
    out = []
    n = len(text)
    cls = [_cls(c) for c in text]
    i = 0
    while i < n:
        if text[i] == "'":
            hit = next((c for c in CONTRACTIONS if text.startswith(c, i)), None)
            if hit:
                out.append(hit)
                i += len(hit)
                continue
        start = i
        j = i + 1 if (text[i] == " " and i + 1 < n and cls[i + 1] != "W") else i
        c = cls[j]
        if c in ("L", "N", "O"):
            # ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+' (an optional space
            # binds to whichever run follows it).
            k = j
            while k < n and cls[k] == c:
                k += 1
            out.append(text[start:k])
            i = k
            continue
        # White space: '\s+(?!\S)' leaves the last space of a run for the
        # word that follows; '\s+' takes a lone one.
        k = i
        while k < n and cls[k] == "W":
            k += 1
        if k < n and k - i >= 2:
            k -= 1
        elif k < n:
            k = i + 1
        out.append(text[i:k])
        i = k
    return out


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    mapping = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


BYTE_ENC = bytes_to_unicode()


def word_symbols(piece):
    return "".join(BYTE_ENC[b] for b in piece.encode("utf-8"))


def train_bpe(text_iter, vocab_size, log=print):
    """Learns merges until the vocabulary (256 bytes + merged tokens +
    specials) has `vocab_size` entries. Pair counts are kept incrementally:
    a merge only revisits the words that contain the merged pair."""
    counts = Counter()
    for text in text_iter:
        counts.update(pre_tokenize(text))
    words, freqs = [], []
    for piece, cnt in counts.items():
        words.append(list(word_symbols(piece)))
        freqs.append(cnt)
    tokens = [BYTE_ENC[b] for b in range(256)]
    token_set = set(tokens)
    pair_count = defaultdict(int)
    where = defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freqs[wi]
            where[(a, b)].add(wi)
    # Max-heap on (count, then the lexicographically smallest pair) with lazy
    # invalidation: stale entries are skipped when popped.
    heap = [(-cnt, p) for p, cnt in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    target = vocab_size - len(SPECIAL_TOKENS)
    while len(tokens) < target and heap:
        negc, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -negc or negc == 0:
            continue
        a, b = pair
        new = a + b
        merges.append(pair)
        if new not in token_set:
            token_set.add(new)
            tokens.append(new)
        changed = set()
        for wi in list(where[pair]):
            w = words[wi]
            f = freqs[wi]
            i = 0
            out = []
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            if len(out) == len(w):
                continue
            for p in zip(w, w[1:]):
                pair_count[p] -= f
                changed.add(p)
            for p in zip(out, out[1:]):
                pair_count[p] += f
                where[p].add(wi)
                changed.add(p)
            words[wi] = out
        del where[pair]
        pair_count.pop(pair, None)
        for p in changed:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
        if len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges, vocab {len(tokens)}, last {new!r} x{-negc}")
    tokens += SPECIAL_TOKENS
    return tokens, merges


class Tokenizer:
    """Encodes with learned merges: in each word, repeatedly merge the
    adjacent pair with the lowest merge rank (the standard BPE rule)."""

    def __init__(self, tokens, merges):
        self.tokens = tokens
        self.id_of = {t: i for i, t in enumerate(tokens)}
        self.rank = {tuple(m): r for r, m in enumerate(merges)}
        self.special = {t: self.id_of[t] for t in SPECIAL_TOKENS}
        self.byte_dec = {v: k for k, v in BYTE_ENC.items()}
        self._cache = {}

    def _bpe(self, piece):
        hit = self._cache.get(piece)
        if hit is not None:
            return hit
        w = list(word_symbols(piece))
        while len(w) > 1:
            best, best_rank = None, None
            for i in range(len(w) - 1):
                r = self.rank.get((w[i], w[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = w[best], w[best + 1]
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            w = out
        ids = [self.id_of[s] for s in w]
        if len(self._cache) < 500_000:
            self._cache[piece] = ids
        return ids

    def encode(self, text, allow_special=False):
        """Token ids of `text`; with allow_special, the special token strings
        become their ids and the text between them is encoded normally."""
        if not allow_special:
            return [i for p in pre_tokenize(text) for i in self._bpe(p)]
        ids, pos = [], 0
        while pos < len(text):
            nxt = min(((text.find(s, pos), s) for s in SPECIAL_TOKENS if text.find(s, pos) >= 0),
                      default=None)
            end = nxt[0] if nxt else len(text)
            if end > pos:
                ids += self.encode(text[pos:end])
            if not nxt:
                break
            ids.append(self.special[nxt[1]])
            pos = end + len(nxt[1])
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in self.special:
                out += t.encode()
            else:
                out += bytes(self.byte_dec[ch] for ch in t)
        return out.decode("utf-8", errors="replace")
