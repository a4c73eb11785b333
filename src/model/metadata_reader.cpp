#include "model/metadata_reader.h"

#include <cmath>

#include "core/error.h"

namespace oscar::model {

int MetadataReader::checked(const std::string& key, std::optional<int64_t> v, int64_t min) const {
  require(v.has_value(), where() + "key " + prefix_ + key + " is not an integer");
  require(*v >= min && *v < (int64_t(1) << 31),
          where() + "key " + prefix_ + key + " has invalid value " + std::to_string(*v));
  return (int)*v;
}

int MetadataReader::need_int(const std::string& key) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  require(v != nullptr, where() + "missing key " + prefix_ + key);
  return checked(key, v->as_int(), 1);
}

int MetadataReader::opt_int(const std::string& key, int def) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  return v ? checked(key, v->as_int(), 1) : def;
}

int MetadataReader::opt_count(const std::string& key, int def) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  return v ? checked(key, v->as_int(), 0) : def;
}

double MetadataReader::opt_float(const std::string& key, double def) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  if (!v) return def;
  const auto x = v->as_double();
  require(x.has_value() && std::isfinite(*x), where() + "key " + prefix_ + key + " is not a finite number");
  return *x;
}

std::string MetadataReader::opt_string(const std::string& key, const std::string& def) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  if (!v) return def;
  const std::string* s = v->as_string();
  require(s != nullptr, where() + "key " + prefix_ + key + " is not a string");
  return *s;
}

std::vector<int> MetadataReader::per_layer_int(const std::string& key, int n_layer, int def) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  if (!v) return std::vector<int>((size_t)n_layer, def);
  if (!v->is_array()) return std::vector<int>((size_t)n_layer, checked(key, v->as_int(), 1));
  const gguf::Array* a = v->as_array();
  require(a->items.size() == (size_t)n_layer, where() + "key " + prefix_ + key + " has " +
                                                   std::to_string(a->items.size()) + " values for " +
                                                   std::to_string(n_layer) + " layers");
  std::vector<int> out;
  for (const auto& item : a->items) out.push_back(checked(key, item.as_int(), 1));
  return out;
}

std::optional<std::vector<bool>> MetadataReader::per_layer_flags(const std::string& key, int n_layer) const {
  const gguf::Value* v = f_.find(prefix_ + key);
  if (!v) return std::nullopt;
  std::vector<bool> out((size_t)n_layer);
  if (!v->is_array()) {
    const int period = checked(key, v->as_int(), 1);
    for (int i = 0; i < n_layer; ++i) out[(size_t)i] = (i % period) < period - 1;
    return out;
  }
  const gguf::Array* a = v->as_array();
  require(a->items.size() == (size_t)n_layer, where() + "key " + prefix_ + key + " has " +
                                                   std::to_string(a->items.size()) + " values for " +
                                                   std::to_string(n_layer) + " layers");
  for (int i = 0; i < n_layer; ++i) {
    const auto b = a->items[(size_t)i].as_int();
    require(b.has_value() && (*b == 0 || *b == 1), where() + "key " + prefix_ + key + " must hold booleans");
    out[(size_t)i] = *b == 1;
  }
  return out;
}

}  // namespace oscar::model
