#include "torchio/rotation_set.h"

#include <cmath>

#include "core/error.h"

namespace oscar::torchio {

namespace {

constexpr int kMaxLayerId = 1 << 16;
constexpr int64_t kMaxDim = 1 << 14;  // head dims are 64..512; caps d*d reads

std::vector<float> finite_floats(const Tensor& t, const std::string& what) {
  std::vector<float> v = t.to_float32();
  for (float x : v)
    if (!std::isfinite(x)) throw Error(what + " holds a non-finite value");
  return v;
}

}  // namespace

RotationSet rotation_set_from(const Value& root, const std::string& name) {
  RotationSet rs;
  rs.source = name;
  try {
    if (!root.is_dict()) throw Error("checkpoint root is a " + root.kind_name() + ", expected a dict");
    rs.format_version = (int)root.at("format_version").as_int("format_version");
    if (rs.format_version != 1)
      throw Error("unsupported format_version " + std::to_string(rs.format_version) + " (this reader knows 1)");
    rs.objective = root.at("objective").as_str("objective");
    rs.source_grouping = root.at("source_grouping").as_str("source_grouping");
    const Value& layers = root.at("layers");
    if (!layers.is_dict()) throw Error("'layers' is a " + layers.kind_name() + ", expected a dict");
    if (layers.dict.empty()) throw Error("'layers' is empty");
    for (const auto& [k, entry] : layers.dict) {
      // Keys are ints in the published files; accept decimal strings too.
      int64_t id = -1;
      if (k->is_int()) {
        id = k->as_int("layer key");
      } else if (k->is_str() && !k->s.empty() && k->s.size() < 7 &&
                 k->s.find_first_not_of("0123456789") == std::string::npos) {
        id = std::stoll(k->s);
      } else {
        throw Error("layer key of type " + k->kind_name() + " is not a layer number");
      }
      if (id < 0 || id >= kMaxLayerId) throw Error("layer id " + std::to_string(id) + " is out of range");
      const std::string where = "layers[" + std::to_string(id) + "]";
      if (rs.rotation.count((int)id)) throw Error(where + " appears twice");
      if (!entry->is_dict()) throw Error(where + " is a " + entry->kind_name() + ", expected a dict");
      const int64_t lid = entry->at("layer_id").as_int(where + ".layer_id");
      if (lid != id) throw Error(where + ".layer_id is " + std::to_string(lid));
      const Tensor& rot = entry->at("rotation").tensor(where + ".rotation");
      if (rot.shape.size() != 2 || rot.shape[0] != rot.shape[1] || rot.shape[0] == 0 || rot.shape[0] > kMaxDim)
        throw Error(where + ".rotation is " + rot.describe() + ", expected a square [d, d] matrix");
      const int d = (int)rot.shape[0];
      rs.dims[(int)id] = d;
      if (!dtype_is_float(rot.dtype)) throw Error(where + ".rotation has dtype " + dtype_name(rot.dtype));
      if (rs.rotation_dtype.empty()) rs.rotation_dtype = dtype_name(rot.dtype);
      const Tensor& eig = entry->at("eigenvalues").tensor(where + ".eigenvalues");
      if (eig.shape.size() != 1 || eig.shape[0] != d)
        throw Error(where + ".eigenvalues is " + eig.describe() + ", expected [" + std::to_string(d) + "]");
      rs.rotation[(int)id] = finite_floats(rot, where + ".rotation");
      rs.eigenvalues[(int)id] = finite_floats(eig, where + ".eigenvalues");
    }
  } catch (const Error& e) {
    throw Error(name + ": not an OSCAR rotation checkpoint: " + e.what());
  }
  rs.dim = rs.dims.begin()->second;
  for (const auto& [id, d] : rs.dims)
    if (d != rs.dim) rs.dim = 0;
  return rs;
}

RotationSet load_rotation_set(const std::string& path) {
  Checkpoint ck = Checkpoint::open(path);
  return rotation_set_from(ck.root(), path);
}

double orthogonality_error(const std::vector<float>& m, int d) {
  double worst = 0;
  for (int r = 0; r < d; ++r) {
    const float* a = m.data() + (size_t)r * d;
    for (int c = r; c < d; ++c) {
      const float* b = m.data() + (size_t)c * d;
      double dot = 0;
      for (int k = 0; k < d; ++k) dot += (double)a[k] * b[k];
      const double err = std::fabs(dot - (r == c ? 1.0 : 0.0));
      if (!(err <= worst)) worst = err;  // NaN propagates as "worst"
    }
  }
  return worst;
}

std::vector<float> transpose(const std::vector<float>& m, int d) {
  std::vector<float> t(m.size());
  for (int r = 0; r < d; ++r)
    for (int c = 0; c < d; ++c) t[(size_t)c * d + r] = m[(size_t)r * d + c];
  return t;
}

}  // namespace oscar::torchio
