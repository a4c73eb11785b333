// Hand-built archives and pickles: a minimal valid rotation checkpoint loads
// (plain and zip64), and each kind of defect or hostile construct is refused
// with a specific one-line oscar::Error.
#include <gtest/gtest.h>

#include "core/error.h"
#include "torchio/rotation_set.h"
#include "torchio_test_util.h"

namespace oscar::torchio::test {
namespace {

// The root dict of a one-layer d=2 rotation checkpoint up to (not including)
// the rotation tensor, so tests can splice in their own tensor.
Pickle rotation_head(int fv = 1) {
  Pickle p;
  p.op('}').op('(').str("format_version").int1((uint8_t)fv).str("objective").str("qqt_r_h_pbr");
  p.str("source_grouping").str("layer").str("layers").op('}').op('(').int1(0).op('}').op('(');
  p.str("layer_id").int1(0).str("rotation");
  return p;
}
// Closes what rotation_head opened, with an eigenvalue tensor of `n` values.
std::vector<uint8_t> rotation_tail(Pickle p, int n = 2) {
  p.str("eigenvalues").tensor("FloatStorage", "1", 2, 0, {n}, {1});
  return p.op('u').op('u').op('u').stop();
}

std::vector<uint8_t> identity_pickle() {
  Pickle p = rotation_head();
  p.tensor("FloatStorage", "0", 4, 0, {2, 2}, {2, 1});
  return rotation_tail(p);
}

ZipBuilder archive(const std::vector<uint8_t>& pkl) {
  ZipBuilder z;
  z.add("archive/data.pkl", pkl);
  z.add("archive/byteorder", std::string("little"));
  z.add("archive/data/0", floats_bytes({1, 0, 0, 1}));
  z.add("archive/data/1", floats_bytes({0.5f, 2.0f}));
  z.add("archive/version", std::string("3\n"));
  return z;
}

// Parses `bytes` as a rotation checkpoint; returns the error text ("" if ok).
std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    Checkpoint ck = Checkpoint::parse(bytes, "t.pt");
    rotation_set_from(ck.root(), "t.pt");
    return "";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line error: " << msg;
    return msg;
  }
}
std::string pickle_error(const std::vector<uint8_t>& pkl) { return error_of(archive(pkl).build()); }

TEST(TorchioValid, MinimalCheckpointLoads) {
  for (bool z64 : {false, true}) {
    ZipBuilder z = archive(identity_pickle());
    z.zip64 = z64;
    Checkpoint ck = Checkpoint::parse(z.build(), "t.pt");
    EXPECT_EQ(ck.prefix(), "archive/");
    RotationSet rs = rotation_set_from(ck.root(), "t.pt");
    EXPECT_EQ(rs.dim, 2);
    EXPECT_EQ(rs.rotation.at(0), (std::vector<float>{1, 0, 0, 1}));
    EXPECT_EQ(rs.eigenvalues.at(0), (std::vector<float>{0.5f, 2.0f}));
    EXPECT_EQ(orthogonality_error(rs.rotation.at(0), 2), 0.0);
  }
}

TEST(TorchioZip, NotAZipOrTruncated) {
  EXPECT_CONTAINS(error_of({}), "not a zip archive");
  EXPECT_CONTAINS(error_of(std::vector<uint8_t>(100, 'x')), "not a zip archive");
  const auto full = archive(identity_pickle()).build();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    EXPECT_NE(error_of(cut), "") << "prefix of " << n << " bytes accepted";
  }
  std::vector<uint8_t> cut(full.begin(), full.end() - 30);
  EXPECT_CONTAINS(error_of(cut), "truncated zip archive");
}

// Flipping any single byte either still parses or is refused cleanly (run
// under ASan/UBSan this also proves no out-of-bounds access).
TEST(TorchioZip, SingleByteCorruptions) {
  const auto full = archive(identity_pickle()).build();
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      auto bad = full;
      bad[i] ^= x;
      (void)error_of(bad);
    }
  }
}

TEST(TorchioZip, CompressedEncryptedCrcAndLayout) {
  ZipBuilder z = archive(identity_pickle());
  z.items[2].method = 8;
  EXPECT_CONTAINS(error_of(z.build()), "'archive/data/0' is compressed (method 8)");
  z = archive(identity_pickle());
  z.items[0].bad_crc = true;
  EXPECT_CONTAINS(error_of(z.build()), "'archive/data.pkl' fails its CRC-32 check");

  ZipBuilder none;
  none.add("archive/other", std::string("x"));
  EXPECT_CONTAINS(error_of(none.build()), "has no data.pkl");

  z = archive(identity_pickle());
  z.items[1].data = {'b', 'i', 'g'};
  EXPECT_CONTAINS(error_of(z.build()), "byte order is 'big'");

  auto b = archive(identity_pickle()).build();
  set32(b, b.size() - 6, 0x7fffffff);  // central directory offset
  EXPECT_CONTAINS(error_of(b), "central directory");

  std::vector<uint8_t> legacy{0x80, 0x02, 0x8a, 0x0a};
  EXPECT_CONTAINS(error_of(legacy), "legacy (non-zip) torch.save format");
}

TEST(TorchioPickle, OpcodesAndGlobals) {
  Pickle p;
  p.op(0xff);
  EXPECT_CONTAINS(pickle_error(p.stop()), "unsupported pickle opcode 0xff");

  Pickle g;
  g.global("os", "system").str("echo hi").op(0x85).op('R');
  EXPECT_CONTAINS(pickle_error(g.stop()), "refusing pickle GLOBAL 'os.system'");

  Pickle od;
  od.global("collections", "OrderedDict").op('(').int1(1).op('t').op('R');
  EXPECT_CONTAINS(pickle_error(od.stop()), "OrderedDict with constructor arguments");

  Pickle st;
  st.global("torch", "FloatStorage").op(')').op('R');
  EXPECT_CONTAINS(pickle_error(st.stop()), "'torch.FloatStorage' is not callable here");

  Pickle nostop;
  nostop.op('}');
  EXPECT_CONTAINS(pickle_error(nostop.b), "truncated pickle");

  Pickle get;
  get.op('h').op(9);
  EXPECT_CONTAINS(pickle_error(get.stop()), "memo slot 9 that was never set");

  Pickle under;
  under.op('a');
  EXPECT_CONTAINS(pickle_error(under.stop()), "stack underflow");

  Pickle two;
  two.op('N').op('N');
  EXPECT_CONTAINS(pickle_error(two.stop()), "STOP with a malformed stack");

  Pickle tkey;
  tkey.op('}').op(')').int1(1).op('s');
  EXPECT_CONTAINS(pickle_error(tkey.stop()), "dict key of unsupported type tuple");
}

TEST(TorchioPickle, RecursionAndSharing) {
  Pickle deep;
  deep.op('N');
  for (int i = 0; i < 100000; ++i) deep.op(0x85);  // TUPLE1, nested
  EXPECT_CONTAINS(pickle_error(deep.stop()), "nested deeper than 64");

  Pickle self;
  self.op(']').op('2').op('a');  // l = []; l.append(l)
  EXPECT_CONTAINS(pickle_error(self.stop()), "inserted into itself");

  Pickle shared;
  shared.op(']').op('q').op(0).op(0x85).op('h').op(0).int1(1).op('a');
  EXPECT_CONTAINS(pickle_error(shared.stop()), "already nested");

  Pickle bigint;
  bigint.op(0x8a).op(9).raw(std::string(9, '\x01'));
  EXPECT_CONTAINS(pickle_error(bigint.stop()), "integer wider than 64 bits");
}

TEST(TorchioPickle, PersistentIds) {
  Pickle tag = rotation_head();
  tag.op('(').str("blob").op('t').op('Q');
  EXPECT_CONTAINS(pickle_error(rotation_tail(tag)), "unsupported persistent id");

  Pickle missing = rotation_head();
  missing.tensor("FloatStorage", "7", 4, 0, {2, 2}, {2, 1});
  EXPECT_CONTAINS(pickle_error(rotation_tail(missing)), "storage '7' has no zip entry 'archive/data/7'");

  Pickle size = rotation_head();
  size.tensor("FloatStorage", "0", 5, 0, {2, 2}, {2, 1});
  EXPECT_CONTAINS(pickle_error(rotation_tail(size)), "declares 5 float32 elements but its entry holds 16 bytes");

  Pickle notype = rotation_head();
  notype.op('(').str("storage").str("FloatStorage").str("0").str("cpu").int1(4).op('t').op('Q');
  EXPECT_CONTAINS(pickle_error(rotation_tail(notype)), "instead of a storage type");
}

TEST(TorchioPickle, TensorBounds) {
  auto with_tensor = [](int32_t numel, int32_t off, std::vector<int32_t> sz, std::vector<int32_t> sd) {
    Pickle p = rotation_head();
    p.tensor("FloatStorage", "0", numel, off, sz, sd);
    return pickle_error(rotation_tail(p));
  };
  EXPECT_CONTAINS(with_tensor(4, 0, {2, 2}, {3, 1}), "reaches element 4 of a storage of 4");
  EXPECT_CONTAINS(with_tensor(4, 1, {2, 2}, {2, 1}), "reaches element 4 of a storage of 4");
  EXPECT_CONTAINS(with_tensor(4, 0, {2, 2}, {-2, 1}), "negative tensor size or stride");
  EXPECT_CONTAINS(with_tensor(4, -1, {2, 2}, {2, 1}), "negative storage offset");
  EXPECT_CONTAINS(with_tensor(4, 0, {1 << 30, 1 << 30}, {0, 0}), "far more elements than its storage");
  EXPECT_CONTAINS(with_tensor(4, 0, {1 << 30, 1 << 30, 1 << 30}, {0, 0, 0}), "huge declared tensor shape");
  EXPECT_CONTAINS(with_tensor(4, 0, {2, 2}, {2}), "size and stride differ");
  // Legal but not what a rotation needs:
  EXPECT_CONTAINS(with_tensor(4, 0, {4}, {1}), "layers[0].rotation is float32[4], expected a square");
  // A transposed view is fine and read in logical order.
  Pickle t = rotation_head();
  t.tensor("FloatStorage", "0", 4, 0, {2, 2}, {1, 2});
  Checkpoint ck = Checkpoint::parse(archive(rotation_tail(t)).build(), "t.pt");
  EXPECT_FALSE(ck.root().at("layers").at(0).at("rotation").tensor().is_contiguous());
}

TEST(TorchioSchema, RotationSchemaErrors) {
  Pickle longs = rotation_head();
  longs.tensor("IntStorage", "0", 4, 0, {2, 2}, {2, 1});
  EXPECT_CONTAINS(pickle_error(rotation_tail(longs)), "layers[0].rotation has dtype int32");

  Pickle fv = rotation_head(2);
  fv.tensor("FloatStorage", "0", 4, 0, {2, 2}, {2, 1});
  EXPECT_CONTAINS(pickle_error(rotation_tail(fv)), "unsupported format_version 2");

  Pickle eig = rotation_head();
  eig.tensor("FloatStorage", "0", 4, 0, {2, 2}, {2, 1});
  EXPECT_CONTAINS(pickle_error(rotation_tail(eig, 1)), "layers[0].eigenvalues is float32[1], expected [2]");

  Pickle rootlist;
  rootlist.op(']');
  EXPECT_CONTAINS(pickle_error(rootlist.stop()), "not an OSCAR rotation checkpoint: checkpoint root is a list");

  Pickle nolayers;
  nolayers.op('}').op('(').str("format_version").int1(1).str("objective").str("x");
  nolayers.str("source_grouping").str("layer").op('u');
  EXPECT_CONTAINS(pickle_error(nolayers.stop()), "missing key 'layers'");

  Pickle badid = rotation_head();
  badid.tensor("FloatStorage", "0", 4, 0, {2, 2}, {2, 1});
  auto bytes = rotation_tail(badid);
  // layer_id value (BININT1 0 right after the "layer_id" string) -> 5
  const std::string key = "layer_id";
  auto it = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
  ASSERT_NE(it, bytes.end());
  *(it + key.size() + 1) = 5;
  EXPECT_CONTAINS(pickle_error(bytes), "layers[0].layer_id is 5");

  ZipBuilder nan = archive(identity_pickle());
  nan.items[2].data = floats_bytes({1, 0, 0, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_CONTAINS(error_of(nan.build()), "layers[0].rotation holds a non-finite value");
}

}  // namespace
}  // namespace oscar::torchio::test
