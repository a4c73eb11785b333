// Typed, validated access to a converted GGUF's architecture-prefixed
// hyper-parameters ("gemma3.attention.sliding_window", ...). Every bad value
// becomes an Error naming the file and the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace oscar::model {

class MetadataReader {
 public:
  MetadataReader(const gguf::GgufFile& f, std::string prefix) : f_(f), prefix_(std::move(prefix)) {}

  const std::string& prefix() const { return prefix_; }
  std::string where() const { return "model " + f_.path() + ": "; }
  bool has(const std::string& key) const { return f_.find(prefix_ + key) != nullptr; }

  // Positive integers below 2^31.
  int need_int(const std::string& key) const;
  int opt_int(const std::string& key, int def) const;
  // Non-negative integers (0 allowed, e.g. a count of shared layers).
  int opt_count(const std::string& key, int def) const;
  double opt_float(const std::string& key, double def) const;
  std::string opt_string(const std::string& key, const std::string& def) const;

  // A key that converters write either as one value for every layer or as
  // an array with one value per layer (head counts, FFN widths). Values must
  // be positive; a missing key gives `def` for every layer.
  std::vector<int> per_layer_int(const std::string& key, int n_layer, int def) const;
  // A per-layer array of booleans (or 0/1 integers); nullopt when absent.
  // A scalar integer n means "every n-th layer is false" (a period).
  std::optional<std::vector<bool>> per_layer_flags(const std::string& key, int n_layer) const;

 private:
  int checked(const std::string& key, std::optional<int64_t> v, int64_t min) const;
  const gguf::GgufFile& f_;
  std::string prefix_;
};

}  // namespace oscar::model
