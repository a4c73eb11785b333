// How per-token hidden states become one embedding (llama.cpp's pooling
// types), the normalisations llama-server offers (embd_normalize), and the
// base64 encoding of OpenAI's encoding_format "base64". Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oscar::server {

// The values are llama.cpp's, as GGUFs store them in {arch}.pooling_type.
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

// "none" | "mean" | "cls" | "last" | "rank"; nullopt for anything else.
std::optional<Pooling> pooling_from_name(const std::string& name);
const char* pooling_name(Pooling p);

// Pools n_tokens rows of n_embd values (row-major): Mean averages them, Cls
// takes the first, Last the last. None and Rank are not poolings of rows.
std::vector<float> pool_rows(const float* rows, int n_tokens, int n_embd, Pooling p);

// In place: -1 none, 0 max-absolute scaled to the int16 range, 1 taxicab,
// 2 Euclidean (L2), > 2 that p-norm. A zero vector stays zero.
void normalize_embedding(std::vector<float>& v, int mode);

// The float32 values' little-endian bytes in standard base64.
std::string embedding_base64(const std::vector<float>& v);

}  // namespace oscar::server
