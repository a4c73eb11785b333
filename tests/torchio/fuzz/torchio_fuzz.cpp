// libFuzzer target for the torch.save reader. Any input must either load or
// be refused with oscar::Error: never crash, hang, leak or read out of bounds.
//
// Inputs starting with "PK" are whole checkpoints (the zip layer). Anything
// else is used as data.pkl inside a fixed archive that also holds storages
// "0" (16 float32) and "1" (8 float16), so the fuzzer reaches the pickle
// machine and tensor checks without having to forge zip headers and CRCs.
// A loaded tree is walked, every tensor read, and the rotation schema tried.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "torchio/checkpoint.h"
#include "torchio/rotation_set.h"

using namespace oscar;
using namespace oscar::torchio;

namespace {

void put(std::vector<uint8_t>& b, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) b.push_back((uint8_t)(v >> (8 * k)));
}

std::vector<uint8_t> wrap(const uint8_t* pkl, size_t n) {
  struct Item {
    std::string name;
    std::vector<uint8_t> data;
  };
  std::vector<Item> items{{"a/data.pkl", std::vector<uint8_t>(pkl, pkl + n)},
                          {"a/data/0", std::vector<uint8_t>(64, 0x3f)},
                          {"a/data/1", std::vector<uint8_t>(16, 0x3c)}};
  std::vector<uint8_t> out, cd;
  for (const Item& it : items) {
    const uint32_t off = (uint32_t)out.size(), crc = crc32(it.data);
    const uint32_t size = (uint32_t)it.data.size(), len = (uint32_t)it.name.size();
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4);
    put(out, crc, 4), put(out, size, 4), put(out, size, 4), put(out, len, 2), put(out, 0, 2);
    out.insert(out.end(), it.name.begin(), it.name.end());
    out.insert(out.end(), it.data.begin(), it.data.end());
    put(cd, 0x02014b50, 4), put(cd, 20, 2), put(cd, 20, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4);
    put(cd, crc, 4), put(cd, size, 4), put(cd, size, 4), put(cd, len, 2), put(cd, 0, 2), put(cd, 0, 2);
    put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4), put(cd, off, 4);
    cd.insert(cd.end(), it.name.begin(), it.name.end());
  }
  const uint32_t cd_off = (uint32_t)out.size();
  out.insert(out.end(), cd.begin(), cd.end());
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, items.size(), 2), put(out, items.size(), 2);
  put(out, cd.size(), 4), put(out, cd_off, 4), put(out, 0, 2);
  return out;
}

// Touches every node (the tree is depth-capped and acyclic by construction;
// a node budget bounds DAG blow-up) and reads every tensor.
uint64_t walk(const Value& v, uint64_t& budget) {
  if (budget == 0) return 0;
  --budget;
  uint64_t h = (uint64_t)v.kind + v.s.size() + (uint64_t)v.i + v.b;
  for (const auto& x : v.items) h += walk(*x, budget);
  for (const auto& [k, x] : v.dict) h += walk(*k, budget) + walk(*x, budget);
  if (v.kind == Value::Kind::Tensor && v.tens->numel() <= (1u << 20)) {
    try {
      for (float f : v.tens->to_float32()) h += (uint64_t)(f == f);
    } catch (const Error&) {
    }
    h += v.tens->is_contiguous() + v.tens->describe().size();
  }
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes;
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') bytes.assign(data, data + size);
  else bytes = wrap(data, size);
  try {
    Checkpoint ck = Checkpoint::parse(bytes, "fuzz");
    uint64_t budget = 100000;
    volatile uint64_t sink = walk(ck.root(), budget);
    (void)sink;
    try {
      RotationSet rs = rotation_set_from(ck.root(), "fuzz");
      for (const auto& [id, m] : rs.rotation) sink = (uint64_t)orthogonality_error(m, rs.dims.at(id));
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }
  return 0;
}
