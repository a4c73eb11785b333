#include "kld_base.h"

#include <bit>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/fp16.h"

namespace oscar::ppl {

// Arrays are copied with memcpy; the format is little-endian, as are the
// hosts this project targets (x86-64, arm64).
static_assert(std::endian::native == std::endian::little, "kld_base assumes a little-endian host");

namespace {

constexpr char kMagic[8] = {'O', 'S', 'C', 'A', 'R', 'K', 'L', 'D'};

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

size_t elt_size(LogprobType t) { return t == LogprobType::F32 ? 4 : 2; }

}  // namespace

LogprobType parse_logprob_type(const std::string& name) {
  if (name == "f32") return LogprobType::F32;
  if (name == "f16") return LogprobType::F16;
  throw Error("--kl-divergence-type: expected f32 or f16, got '" + name + "'");
}

const char* logprob_type_name(LogprobType t) { return t == LogprobType::F32 ? "f32" : "f16"; }

uint64_t KldHeader::record_bytes() const { return 4 + (uint64_t)n_vocab * elt_size(type); }

uint64_t KldHeader::file_bytes() const {
  return kKldHeaderSize + 4 * n_tokens() + (uint64_t)n_chunks * n_scored() * record_bytes();
}

uint64_t vocab_hash(std::span<const std::string> token_texts) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint8_t b) {
    h ^= b;
    h *= 0x100000001b3ull;
  };
  for (const std::string& t : token_texts) {
    for (char c : t) mix((uint8_t)c);
    mix(0);
  }
  return h;
}

void round_trip(LogprobType t, std::span<float> logp) {
  if (t == LogprobType::F32) return;
  for (float& x : logp) x = fp16_to_f32(f32_to_fp16(x));
}

KldBaseWriter::KldBaseWriter(const std::string& path, const KldHeader& h, std::span<const int32_t> tokens)
    : path_(path), h_(h), f_(path, std::ios::binary | std::ios::trunc) {
  if (!f_) throw Error("--kl-divergence-base: cannot create '" + path + "'");
  require(tokens.size() == h.n_tokens(), "kld base: token count does not match the header");
  uint8_t hdr[kKldHeaderSize] = {};
  std::memcpy(hdr, kMagic, 8);
  put_u32(hdr + 8, kKldVersion);
  put_u32(hdr + 12, kKldHeaderSize);
  put_u32(hdr + 16, h.n_vocab);
  put_u32(hdr + 20, h.n_ctx);
  put_u32(hdr + 24, h.first);
  put_u32(hdr + 28, h.n_chunks);
  put_u32(hdr + 32, (uint32_t)h.type);
  put_u32(hdr + 36, (h.bos_replaced ? 1u : 0u) | (h.decode_mode ? 2u : 0u));
  put_u64(hdr + 40, h.vocab_hash);
  f_.write(reinterpret_cast<const char*>(hdr), sizeof(hdr));
  f_.write(reinterpret_cast<const char*>(tokens.data()), (std::streamsize)(tokens.size() * 4));
  if (!f_) throw Error("--kl-divergence-base: write to '" + path + "' failed");
  buf_.resize(h.record_bytes());
  written_.assign((size_t)h.n_chunks * h.n_scored(), false);
}

void KldBaseWriter::put(uint64_t index, float nll, std::span<const float> logp) {
  require(logp.size() == h_.n_vocab, "kld base: record has the wrong vocabulary size");
  require(index < written_.size(), "kld base: record index past the header's count");
  require(!written_[index], "kld base: record " + std::to_string(index) + " written twice");
  std::memcpy(buf_.data(), &nll, 4);
  if (h_.type == LogprobType::F32) {
    std::memcpy(buf_.data() + 4, logp.data(), logp.size() * 4);
  } else {
    uint8_t* p = buf_.data() + 4;
    for (size_t i = 0; i < logp.size(); ++i) {
      const uint16_t v = f32_to_fp16(logp[i]);
      std::memcpy(p + 2 * i, &v, 2);
    }
  }
  f_.seekp((std::streamoff)(kKldHeaderSize + 4 * h_.n_tokens() + index * h_.record_bytes()));
  f_.write(reinterpret_cast<const char*>(buf_.data()), (std::streamsize)buf_.size());
  if (!f_) throw Error("--kl-divergence-base: write to '" + path_ + "' failed");
  written_[index] = true;
  ++n_records_;
}

void KldBaseWriter::finish() {
  require(n_records_ == (uint64_t)h_.n_chunks * h_.n_scored(),
          "kld base: " + std::to_string(n_records_) + " records written, header says " +
              std::to_string((uint64_t)h_.n_chunks * h_.n_scored()));
  f_.flush();
  f_.close();
  if (!f_) throw Error("--kl-divergence-base: write to '" + path_ + "' failed");
}

KldBaseReader::KldBaseReader(const std::string& path) : path_(path), f_(path, std::ios::binary) {
  const std::string where = "--kl-divergence-base '" + path + "': ";
  if (!f_) throw Error(where + "cannot open");
  uint8_t hdr[kKldHeaderSize] = {};
  f_.read(reinterpret_cast<char*>(hdr), sizeof(hdr));
  if (f_.gcount() < 16 || std::memcmp(hdr, kMagic, 8) != 0)
    throw Error(where + "not an oscar KLD base file (bad magic)");
  const uint32_t version = get_u32(hdr + 8);
  if (version != kKldVersion)
    throw Error(where + "format version " + std::to_string(version) + ", this build reads version " +
                std::to_string(kKldVersion));
  if (!f_ || get_u32(hdr + 12) != kKldHeaderSize) throw Error(where + "truncated or malformed header");
  h_.n_vocab = get_u32(hdr + 16);
  h_.n_ctx = get_u32(hdr + 20);
  h_.first = get_u32(hdr + 24);
  h_.n_chunks = get_u32(hdr + 28);
  const uint32_t type = get_u32(hdr + 32);
  const uint32_t flags = get_u32(hdr + 36);
  h_.vocab_hash = get_u64(hdr + 40);
  if (type > 1) throw Error(where + "unknown log-prob type " + std::to_string(type));
  h_.type = (LogprobType)type;
  h_.bos_replaced = flags & 1;
  h_.decode_mode = flags & 2;
  // Bounds that keep the size arithmetic below far from overflow.
  if (h_.n_vocab == 0 || h_.n_vocab > (1u << 24) || h_.n_ctx < 3 || h_.n_ctx > (1u << 24) ||
      h_.first >= h_.n_ctx - 1 || h_.n_chunks == 0 || h_.n_chunks > (1u << 24) || (flags & ~3u))
    throw Error(where + "implausible header (n_vocab " + std::to_string(h_.n_vocab) + ", n_ctx " +
                std::to_string(h_.n_ctx) + ", first " + std::to_string(h_.first) + ", chunks " +
                std::to_string(h_.n_chunks) + ")");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size != h_.file_bytes())
    throw Error(where + "size " + std::to_string(size) + " bytes, the header implies " +
                std::to_string(h_.file_bytes()) + " (truncated or not a KLD base)");
  tokens_.resize(h_.n_tokens());
  f_.read(reinterpret_cast<char*>(tokens_.data()), (std::streamsize)(tokens_.size() * 4));
  if (!f_) throw Error(where + "cannot read the tokens");
  for (int32_t t : tokens_)
    if (t < 0 || (uint32_t)t >= h_.n_vocab) throw Error(where + "token id " + std::to_string(t) + " out of range");
  buf_.resize(h_.record_bytes());
}

void KldBaseReader::get(uint64_t index, float& nll, std::span<float> logp) {
  require(logp.size() == h_.n_vocab, "kld base: wrong vocabulary size for a record");
  if (index >= (uint64_t)h_.n_chunks * h_.n_scored())
    throw Error("--kl-divergence-base '" + path_ + "': record " + std::to_string(index) + " past the last one");
  f_.seekg((std::streamoff)(kKldHeaderSize + 4 * h_.n_tokens() + index * h_.record_bytes()));
  f_.read(reinterpret_cast<char*>(buf_.data()), (std::streamsize)buf_.size());
  if (!f_) throw Error("--kl-divergence-base '" + path_ + "': read failed");
  std::memcpy(&nll, buf_.data(), 4);
  if (h_.type == LogprobType::F32) {
    std::memcpy(logp.data(), buf_.data() + 4, logp.size() * 4);
  } else {
    const uint8_t* p = buf_.data() + 4;
    for (size_t i = 0; i < logp.size(); ++i) {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      logp[i] = fp16_to_f32(v);
    }
  }
}

}  // namespace oscar::ppl
