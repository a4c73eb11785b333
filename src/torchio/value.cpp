// Value-tree accessors and strided tensor reads.
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "torchio/checkpoint.h"

namespace oscar::torchio {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F64: return "float64";
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::I64: return "int64";
    case DType::I32: return "int32";
    case DType::I16: return "int16";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: return 2;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 1;
}

bool dtype_is_float(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

uint64_t Tensor::numel() const {
  uint64_t n = 1;
  for (int64_t s : shape) n *= (uint64_t)s;  // bounded when the tensor was built
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && strides[k] != expect) return false;
    expect *= shape[k];
  }
  return true;
}

std::string Tensor::describe() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

namespace {

float load_float(const uint8_t* p, DType t) {
  switch (t) {
    case DType::F32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DType::F64: {
      double x;
      std::memcpy(&x, p, 8);
      return (float)x;
    }
    case DType::F16: return fp16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
    case DType::BF16: return bf16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
    default: return 0;
  }
}

}  // namespace

std::vector<float> Tensor::to_float32() const {
  if (!dtype_is_float(dtype))
    throw Error("tensor " + describe() + " has dtype " + dtype_name(dtype) + ", expected a floating-point tensor");
  const uint64_t n = numel();
  std::vector<float> out(n);
  if (n == 0) return out;
  const size_t es = dtype_size(dtype);
  const uint8_t* base = storage->bytes.data();
  const size_t nd = shape.size();
  // Walk the index space in row-major order with an odometer; the element
  // offset was proven in range for every index when the tensor was built.
  std::vector<int64_t> idx(nd, 0);
  int64_t off = storage_offset;
  const int64_t inner = nd ? shape[nd - 1] : 1;
  const int64_t inner_stride = nd ? strides[nd - 1] : 0;
  for (uint64_t done = 0; done < n; done += (uint64_t)inner) {
    float* dst = out.data() + done;
    if (dtype == DType::F32 && inner_stride == 1) {
      std::memcpy(dst, base + (size_t)off * 4, (size_t)inner * 4);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = load_float(base + (size_t)(off + j * inner_stride) * es, dtype);
    }
    for (size_t k = nd ? nd - 1 : 0; k-- > 0;) {  // advance the outer dims
      off += strides[k];
      if (++idx[k] < shape[k]) break;
      off -= strides[k] * shape[k];
      idx[k] = 0;
    }
  }
  return out;
}

std::string Value::kind_name() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return ordered ? "OrderedDict" : "dict";
    case Kind::Tensor: return "tensor";
    case Kind::Global: return "global " + s;
    case Kind::Storage: return "storage";
  }
  return "?";
}

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k->kind == Kind::Str && k->s == key) return v.get();
  return nullptr;
}

const Value* Value::get(int64_t key) const {
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : dict)
    if (k->kind == Kind::Int && k->i == key) return v.get();
  return nullptr;
}

const Value& Value::at(std::string_view key) const {
  if (kind != Kind::Dict) throw Error("expected a dict holding '" + std::string(key) + "', found " + kind_name());
  const Value* v = get(key);
  if (!v) throw Error("missing key '" + std::string(key) + "'");
  return *v;
}

const Value& Value::at(int64_t key) const {
  if (kind != Kind::Dict) throw Error("expected a dict holding key " + std::to_string(key) + ", found " + kind_name());
  const Value* v = get(key);
  if (!v) throw Error("missing key " + std::to_string(key));
  return *v;
}

int64_t Value::as_int(const std::string& what) const {
  if (kind == Kind::Int) return i;
  if (kind == Kind::Bool) return b ? 1 : 0;
  throw Error(what + ": expected an int, found " + kind_name());
}

double Value::as_float(const std::string& what) const {
  if (kind == Kind::Float) return f;
  if (kind == Kind::Int) return (double)i;
  throw Error(what + ": expected a number, found " + kind_name());
}

const std::string& Value::as_str(const std::string& what) const {
  if (kind != Kind::Str) throw Error(what + ": expected a str, found " + kind_name());
  return s;
}

const Tensor& Value::tensor(const std::string& what) const {
  if (kind != Kind::Tensor) throw Error(what + ": expected a tensor, found " + kind_name());
  return *tens;
}

}  // namespace oscar::torchio
