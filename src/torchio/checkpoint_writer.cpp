#include "torchio/checkpoint_writer.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "torchio/zip_writer.h"

namespace oscar::torchio {

namespace {

// Emits the pickle opcodes torch.save uses (protocol 2). Memoisation is
// optional in pickle and left out: the files stay small either way.
class PickleOut {
 public:
  PickleOut() { bytes_ = {0x80, 0x02}; }  // PROTO 2

  void op(uint8_t o) { bytes_.push_back(o); }
  void mark() { op('('); }
  void empty_dict() { op('}'); }
  void empty_tuple() { op(')'); }
  void tuple() { op('t'); }
  void setitems() { op('u'); }
  void reduce() { op('R'); }
  void persid() { op('Q'); }
  void newfalse() { op(0x89); }
  void stop() { op('.'); }

  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      op((uint8_t)v);
    } else if (v >= 0 && v < 65536) {
      op('M');
      le(v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      le(v, 4);
    } else {
      op(0x8a);  // LONG1: 8 bytes of two's complement
      op(8);
      le(v, 8);
    }
  }
  void str(const std::string& s) {
    op('X');
    le((int64_t)s.size(), 4);
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void global(const char* module, const char* name) {
    op('c');
    for (const char* p : {module, name}) {
      bytes_.insert(bytes_.end(), p, p + std::strlen(p));
      bytes_.push_back('\n');
    }
  }
  // _rebuild_tensor_v2(('storage', FloatStorage, key, 'cpu', numel) persid,
  //                    0, sizes, strides, False, OrderedDict())
  void float_tensor(const std::string& key, const std::vector<int64_t>& sizes) {
    int64_t numel = 1;
    for (int64_t s : sizes) numel *= s;
    global("torch._utils", "_rebuild_tensor_v2");
    mark();
    mark();
    str("storage");
    global("torch", "FloatStorage");
    str(key);
    str("cpu");
    integer(numel);
    tuple();
    persid();
    integer(0);
    mark();
    for (int64_t s : sizes) integer(s);
    tuple();
    mark();
    int64_t stride = 1;
    std::vector<int64_t> strides(sizes.size());
    for (size_t i = sizes.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= sizes[i];
    }
    for (int64_t s : strides) integer(s);
    tuple();
    newfalse();
    global("collections", "OrderedDict");
    empty_tuple();
    reduce();
    tuple();
    reduce();
  }

  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void le(int64_t v, int n) {
    const uint64_t u = (uint64_t)v;
    for (int i = 0; i < n; ++i) bytes_.push_back((uint8_t)(u >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

std::span<const uint8_t> float_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

void check_layer(const RotationLayer& l, std::set<int>& seen) {
  const std::string where = "rotation checkpoint layer " + std::to_string(l.layer_id);
  require(l.layer_id >= 0, where + ": negative layer id");
  require(seen.insert(l.layer_id).second, where + ": appears twice");
  require(l.dim > 0 && l.dim <= (1 << 14), where + ": bad head dim " + std::to_string(l.dim));
  require(l.rotation.size() == (size_t)l.dim * l.dim,
          where + ": rotation has " + std::to_string(l.rotation.size()) + " values, expected d*d");
  require(l.eigenvalues.size() == (size_t)l.dim,
          where + ": eigenvalues has " + std::to_string(l.eigenvalues.size()) + " values, expected d");
  for (const auto* v : {&l.rotation, &l.eigenvalues})
    for (float x : *v) require(std::isfinite(x), where + ": holds a non-finite value");
}

}  // namespace

std::vector<uint8_t> rotation_checkpoint_bytes(const RotationCheckpoint& ck, const std::string& archive) {
  require(!ck.layers.empty(), "rotation checkpoint: no layers");
  require(!archive.empty() && archive.find('/') == std::string::npos,
          "rotation checkpoint: bad archive name '" + archive + "'");
  std::set<int> seen;
  for (const RotationLayer& l : ck.layers) check_layer(l, seen);

  // Storage keys count up in the order tensors are pickled, as torch.save does.
  PickleOut p;
  p.empty_dict();
  p.mark();
  p.str("format_version");
  p.integer(ck.format_version);
  p.str("objective");
  p.str(ck.objective);
  p.str("source_grouping");
  p.str(ck.source_grouping);
  p.str("layers");
  p.empty_dict();
  p.mark();
  int key = 0;
  for (const RotationLayer& l : ck.layers) {
    p.integer(l.layer_id);
    p.empty_dict();
    p.mark();
    p.str("layer_id");
    p.integer(l.layer_id);
    p.str("rotation");
    p.float_tensor(std::to_string(key++), {l.dim, l.dim});
    p.str("eigenvalues");
    p.float_tensor(std::to_string(key++), {l.dim});
    p.setitems();
  }
  p.setitems();
  p.setitems();
  p.stop();

  ZipWriter z;
  const std::string pre = archive + "/";
  z.add(pre + "data.pkl", std::span<const uint8_t>(p.bytes()));
  z.add(pre + ".format_version", std::string("1"));
  z.add(pre + ".storage_alignment", std::string("64"));
  z.add(pre + "byteorder", std::string("little"));
  key = 0;
  for (const RotationLayer& l : ck.layers) {
    z.add(pre + "data/" + std::to_string(key++), float_bytes(l.rotation));
    z.add(pre + "data/" + std::to_string(key++), float_bytes(l.eigenvalues));
  }
  z.add(pre + "version", std::string("3\n"));
  return z.finish();
}

void save_rotation_checkpoint(const std::string& path, const RotationCheckpoint& ck) {
  namespace fs = std::filesystem;
  // torch names the folder after the file's stem; keep it to safe characters.
  std::string archive = fs::path(path).stem().string();
  for (char& c : archive)
    if (!std::isalnum((unsigned char)c) && c != '_' && c != '-' && c != '.') c = '_';
  if (archive.empty()) archive = "archive";
  const std::vector<uint8_t> bytes = rotation_checkpoint_bytes(ck, archive);

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error("cannot write '" + tmp + "': " + std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  std::error_code ec;
  if (!ok || !closed) {
    fs::remove(tmp, ec);
    throw Error("cannot write '" + tmp + "': write failed (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot rename '" + tmp + "' to '" + path + "'");
  }
}

}  // namespace oscar::torchio
