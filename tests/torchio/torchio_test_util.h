// Helpers for the torchio tests: temp dirs, running Debian's python3-torch,
// and byte-level builders for zips and pickles (valid or deliberately broken).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "torchio/zip_reader.h"

#define EXPECT_CONTAINS(text, fragment)                                  \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos)       \
      << "expected to find: " << (fragment) << "\n                in: " << (text)

namespace oscar::torchio::test {

namespace fs = std::filesystem;

inline fs::path temp_dir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "oscar-" + tag + "-" + std::to_string(::getpid()) + "-" +
                     (info ? std::string(info->test_suite_name()) + "." + info->name() : "x");
  for (char& c : name)
    if (c == '/') c = '_';
  fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string slurp_text(const fs::path& p) {
  const auto b = read_bytes(p);
  return {b.begin(), b.end()};
}

inline void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), (std::streamsize)b.size());
}

inline std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) {
    if (c == '\'') r += "'\\''";
    else r += c;
  }
  return r + "'";
}

// Runs a shell command; returns its exit status (-1 if it did not exit).
inline int run_shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// True when OSCAR_PYTHON can import torch (python3-torch installed).
inline bool have_torch() {
  static const bool ok = run_shell(quote(OSCAR_PYTHON) + " -c 'import torch' >/dev/null 2>&1") == 0;
  return ok;
}

// Runs tests/torchio/make_checkpoints.py with `args` (already quoted).
inline void make_checkpoints(const std::string& args) {
  const std::string script = std::string(OSCAR_SOURCE_DIR) + "/tests/torchio/make_checkpoints.py";
  const std::string cmd = quote(OSCAR_PYTHON) + " " + quote(script) + " " + args;
  ASSERT_EQ(run_shell(cmd), 0) << cmd;
}

inline void put16(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(v & 0xff);
  b.push_back((v >> 8) & 0xff);
}
inline void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}
inline void put64(std::vector<uint8_t>& b, uint64_t v) {
  put32(b, (uint32_t)v);
  put32(b, (uint32_t)(v >> 32));
}
inline void set32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + k] = (uint8_t)(v >> (8 * k));
}

// A zip of STORED entries, laid out like torch.save's (optionally with zip64
// records, a given method or a wrong CRC for negative tests).
struct ZipBuilder {
  struct Item {
    std::string name;
    std::vector<uint8_t> data;
    uint16_t method = 0;
    bool bad_crc = false;
  };
  std::vector<Item> items;
  bool zip64 = false;

  ZipBuilder& add(std::string name, std::vector<uint8_t> data) {
    items.push_back({std::move(name), std::move(data)});
    return *this;
  }
  ZipBuilder& add(std::string name, const std::string& text) {
    return add(std::move(name), std::vector<uint8_t>(text.begin(), text.end()));
  }

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> out, cd;
    for (const Item& it : items) {
      const uint64_t local = out.size();
      uint32_t crc = crc32(it.data);
      if (it.bad_crc) crc ^= 1;
      put32(out, 0x04034b50);
      put16(out, 20);
      put16(out, 0);
      put16(out, it.method);
      put32(out, 0);
      put32(out, crc);
      put32(out, (uint32_t)it.data.size());
      put32(out, (uint32_t)it.data.size());
      put16(out, (uint32_t)it.name.size());
      put16(out, 0);
      out.insert(out.end(), it.name.begin(), it.name.end());
      out.insert(out.end(), it.data.begin(), it.data.end());

      put32(cd, 0x02014b50);
      put16(cd, 20);
      put16(cd, 20);
      put16(cd, 0);
      put16(cd, it.method);
      put32(cd, 0);
      put32(cd, crc);
      put32(cd, (uint32_t)it.data.size());
      put32(cd, (uint32_t)it.data.size());
      put16(cd, (uint32_t)it.name.size());
      put16(cd, zip64 ? 12 : 0);
      put16(cd, 0);
      put16(cd, 0);
      put16(cd, 0);
      put32(cd, 0);
      put32(cd, zip64 ? 0xffffffffu : (uint32_t)local);
      cd.insert(cd.end(), it.name.begin(), it.name.end());
      if (zip64) {
        put16(cd, 0x0001);
        put16(cd, 8);
        put64(cd, local);
      }
    }
    const uint64_t cd_off = out.size();
    out.insert(out.end(), cd.begin(), cd.end());
    if (zip64) {
      const uint64_t z64 = out.size();
      put32(out, 0x06064b50);
      put64(out, 44);
      put16(out, 45);
      put16(out, 45);
      put32(out, 0);
      put32(out, 0);
      put64(out, items.size());
      put64(out, items.size());
      put64(out, cd.size());
      put64(out, cd_off);
      put32(out, 0x07064b50);
      put32(out, 0);
      put64(out, z64);
      put32(out, 1);
    }
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, zip64 ? 0xffff : (uint32_t)items.size());
    put16(out, zip64 ? 0xffff : (uint32_t)items.size());
    put32(out, zip64 ? 0xffffffffu : (uint32_t)cd.size());
    put32(out, zip64 ? 0xffffffffu : (uint32_t)cd_off);
    put16(out, 0);
    return out;
  }
};

// Pickle opcodes as text fragments, for building test pickles.
struct Pickle {
  std::vector<uint8_t> b;
  Pickle() { b.assign({0x80, 0x02}); }  // PROTO 2
  Pickle& op(uint8_t o) {
    b.push_back(o);
    return *this;
  }
  Pickle& raw(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Pickle& str(const std::string& s) {
    op('X');
    put32(b, (uint32_t)s.size());
    return raw(s);
  }
  Pickle& int1(uint8_t v) { return op('K').op(v); }
  Pickle& int4(int32_t v) {
    op('J');
    put32(b, (uint32_t)v);
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  // ('storage', torch.<type>, key, 'cpu', numel) BINPERSID
  Pickle& storage(const std::string& type, const std::string& key, int32_t numel) {
    op('(').str("storage").global("torch", type).str(key).str("cpu").int4(numel).op('t');
    return op('Q');
  }
  // _rebuild_tensor_v2(storage, offset, sizes, strides, False, OrderedDict())
  Pickle& tensor(const std::string& type, const std::string& key, int32_t numel, int32_t offset,
                 const std::vector<int32_t>& sizes, const std::vector<int32_t>& strides) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    storage(type, key, numel).int4(offset);
    op('(');
    for (int32_t s : sizes) int4(s);
    op('t').op('(');
    for (int32_t s : strides) int4(s);
    op('t').op(0x89).global("collections", "OrderedDict").op(')').op('R').op('t');
    return op('R');
  }
  std::vector<uint8_t> stop() const {
    auto r = b;
    r.push_back('.');
    return r;
  }
};

inline std::vector<uint8_t> floats_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace oscar::torchio::test
