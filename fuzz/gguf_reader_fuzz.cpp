// libFuzzer target for the GGUF reader. Any input must either parse or be
// refused with oscar::Error — never crash, hang, leak or read out of bounds.
// A file that parses is also walked completely and copied with the writer:
// the copy must parse to the same content, and copying the copy must give the
// same bytes (the writer's layout is canonical).
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

using namespace oscar;
using namespace oscar::gguf;

namespace {

// Touches everything a consumer might read; returns a checksum so the work
// cannot be optimised away.
uint64_t walk(const Value& v, int depth) {
  uint64_t h = (uint64_t)v.type + std::strlen(value_type_name(v.type));
  if (auto x = v.as_int()) h += (uint64_t)*x;
  if (auto x = v.as_uint()) h += *x;
  if (auto x = v.as_double()) h += (uint64_t)(*x == *x);
  if (auto x = v.as_bool()) h += *x;
  if (const std::string* s = v.as_string()) h += s->size() + (s->empty() ? 0 : (uint8_t)s->back());
  if (const Array* a = v.as_array()) {
    if (depth > 64) __builtin_trap();  // the reader's depth limit failed
    h += (uint64_t)a->elem_type;
    for (const Value& item : a->items) {
      if (item.type != a->elem_type) __builtin_trap();
      h += walk(item, depth + 1);
    }
  }
  return h + encoded_value_size(v);
}

bool same(const Value& a, const Value& b) {
  if (a.type != b.type) return false;
  if (a.is_array()) {
    const Array *x = a.as_array(), *y = b.as_array();
    if (x->elem_type != y->elem_type || x->items.size() != y->items.size()) return false;
    for (size_t i = 0; i < x->items.size(); ++i)
      if (!same(x->items[i], y->items[i])) return false;
    return true;
  }
  if (a.is_float()) {
    const double p = std::get<double>(a.v), q = std::get<double>(b.v);
    return std::memcmp(&p, &q, sizeof p) == 0;
  }
  return a.v == b.v;
}

uint64_t walk_file(const GgufFile& f) {
  uint64_t h = f.version() + f.alignment() + f.data_offset();
  for (const auto& kv : f.metadata()) {
    h += kv.key.size() + walk(kv.value, 0);
    if (f.find(kv.key) != &kv.value) __builtin_trap();
    // Typed lookups either answer or throw a clean error.
    try { h += f.get_string_or(kv.key, "").size(); } catch (const Error&) {}
    try { h += (uint64_t)f.get_int_or(kv.key, 0); } catch (const Error&) {}
    try { h += (uint64_t)(f.get_float_or(kv.key, 0) != 0); } catch (const Error&) {}
    try { h += f.get_bool(kv.key).value_or(false); } catch (const Error&) {}
    try { h += f.get_array(kv.key) != nullptr; } catch (const Error&) {}
  }
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) __builtin_trap();
    const auto d = f.tensor_data(t);
    if (d.size() != t.n_bytes || d.empty()) __builtin_trap();
    h += d.front() + d.back() + t.n_elements() + t.n_rows() + t.row_length();
  }
  return h;
}

std::string temp_path(const char* tag) {
  return "/tmp/gguf_fuzz_" + std::to_string(::getpid()) + "_" + tag + ".gguf";
}

// Copies `f`, re-reads the copy and checks it matches; copies the copy and
// checks the bytes are identical.
void check_copy(const GgufFile& f) {
  const std::string a = temp_path("a"), b = temp_path("b");
  copy_gguf(f, a);
  {
    const GgufFile c = GgufFile::open(a);
    if (c.version() != f.version() || c.alignment() != f.alignment()) __builtin_trap();
    if (c.metadata().size() != f.metadata().size() || c.tensors().size() != f.tensors().size())
      __builtin_trap();
    for (size_t i = 0; i < c.metadata().size(); ++i)
      if (c.metadata()[i].key != f.metadata()[i].key ||
          !same(c.metadata()[i].value, f.metadata()[i].value))
        __builtin_trap();
    for (size_t i = 0; i < c.tensors().size(); ++i) {
      const auto &x = c.tensors()[i], &y = f.tensors()[i];
      if (x.name != y.name || x.type != y.type || x.shape != y.shape) __builtin_trap();
      const auto dx = c.tensor_data(x), dy = f.tensor_data(y);
      if (dx.size() != dy.size() || std::memcmp(dx.data(), dy.data(), dx.size()) != 0) __builtin_trap();
    }
    copy_gguf(c, b);
  }
  MappedFile ma(a), mb(b);
  if (ma.size() != mb.size() || (ma.size() && std::memcmp(ma.data(), mb.data(), ma.size()) != 0))
    __builtin_trap();
  ::unlink(a.c_str());
  ::unlink(b.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const GgufFile f = GgufFile::parse({data, size}, "fuzz.gguf");
    volatile uint64_t sink = walk_file(f);
    (void)sink;
    check_copy(f);
  } catch (const Error& e) {
    // A refusal must be one line naming the file.
    const char* w = e.what();
    if (std::strncmp(w, "gguf: fuzz.gguf: ", 17) != 0 || std::strchr(w, '\n')) __builtin_trap();
  }
  return 0;
}
