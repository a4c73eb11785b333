// The KL-divergence base file: what `oscar-perplexity --kl-divergence-base
// FILE` saves from a reference run (the tokens it evaluated and, for every
// scored position, the log-probabilities over the whole vocabulary), read
// back by `--kl-divergence` to judge another setting on the same tokens.
//
// Format, version 1, all little-endian:
//
//   offset  size  field
//        0     8  magic "OSCARKLD"
//        8     4  u32 version (1)
//       12     4  u32 header_size: bytes before the token array (64)
//       16     4  u32 n_vocab
//       20     4  u32 n_ctx       tokens per chunk
//       24     4  u32 first       first scored position of a chunk (n_ctx/2)
//       28     4  u32 n_chunks
//       32     4  u32 logprob_type  0 = f32, 1 = f16 (IEEE binary16)
//       36     4  u32 flags       bit 0: the first token of every chunk was
//                                 replaced by BOS (the vocabulary adds BOS);
//                                 bit 1: decode scoring (--ppl-mode decode),
//                                 clear: batch scoring
//       40     8  u64 vocab_hash  FNV-1a 64 over every token text, each
//                                 followed by one 0 byte, in id order
//       48    16  reserved, zero
//       64        i32 tokens[n_chunks * n_ctx]  the text's tokens, before the
//                                 BOS replacement
//                 then, chunk by chunk, for each scored position j in
//                 [first, n_ctx - 1) (n_scored = n_ctx - 1 - first records;
//                 record index = chunk * n_scored + j - first):
//                   f32 nll        -log p(token j+1), exact (f32)
//                   T   logp[n_vocab]  log-softmax of the logits at j, in
//                                      logprob_type
//
// The file size must be exactly header + tokens + records; anything else is
// refused as truncated or foreign. f16 halves the size (the records dominate:
// n_vocab * 2 bytes per scored position); its rounding of the log-probs is
// made harmless by comparing through the same rounding (see round_trip).
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace oscar::ppl {

enum class LogprobType : uint32_t { F32 = 0, F16 = 1 };

// Parses "f32" / "f16"; throws Error otherwise.
LogprobType parse_logprob_type(const std::string& name);
const char* logprob_type_name(LogprobType t);

struct KldHeader {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t first = 0;
  uint32_t n_chunks = 0;
  LogprobType type = LogprobType::F16;
  bool bos_replaced = false;
  bool decode_mode = false;
  uint64_t vocab_hash = 0;

  uint32_t n_scored() const { return n_ctx - 1 - first; }
  uint64_t n_tokens() const { return (uint64_t)n_chunks * n_ctx; }
  uint64_t record_bytes() const;  // one scored position
  uint64_t file_bytes() const;    // the whole file
};

inline constexpr uint32_t kKldVersion = 1;
inline constexpr uint32_t kKldHeaderSize = 64;

// FNV-1a 64 over the token texts as described above.
uint64_t vocab_hash(std::span<const std::string> token_texts);

// Rounds log-probs through the storage type in place (identity for f32), so
// the current run is seen exactly as the base was stored: a run compared
// with its own base then gives KLD 0 and 100% top-1 bit for bit.
void round_trip(LogprobType t, std::span<float> logp);

// Writes a base file. Records may come in any order (decode scoring produces
// them position by position across chunks); each is written at its place.
class KldBaseWriter {
 public:
  // Creates `path` and writes the header and tokens (tokens.size() must be
  // n_chunks * n_ctx). Throws Error when the file cannot be written.
  KldBaseWriter(const std::string& path, const KldHeader& h, std::span<const int32_t> tokens);
  // Record `index` (chunk * n_scored + j - first): its nll and n_vocab log-probs.
  void put(uint64_t index, float nll, std::span<const float> logp);
  // Checks that every record was written and flushes; throws Error on failure.
  void finish();

 private:
  std::string path_;
  KldHeader h_;
  std::ofstream f_;
  uint64_t n_records_ = 0;
  std::vector<bool> written_;
  std::vector<uint8_t> buf_;
};

// Reads a base file: header and tokens at open, records by index.
class KldBaseReader {
 public:
  // Throws Error naming the file for a bad magic, version, header, or size.
  explicit KldBaseReader(const std::string& path);
  const KldHeader& header() const { return h_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Record `index`: its nll, and its log-probs decoded to f32 (n_vocab).
  void get(uint64_t index, float& nll, std::span<float> logp);

 private:
  std::string path_;
  KldHeader h_;
  std::ifstream f_;
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> buf_;
};

}  // namespace oscar::ppl
