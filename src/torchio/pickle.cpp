// The pickle subset torch.save emits, run as a plain stack machine that builds
// a Value tree. Safety rules (a checkpoint is untrusted input):
//   - only allow-listed GLOBALs, and REDUCE only on the three known callables;
//   - every read is bounds-checked against the pickle;
//   - a container is frozen once nested, and nesting is capped, so the tree
//     has no cycles and no deep recursion (destructors, walkers stay shallow);
//   - tensors are checked against their storage before they exist.
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "torchio/checkpoint.h"

namespace oscar::torchio {

namespace {

constexpr int kMaxDepth = 64;          // far above torch checkpoints (~5)
constexpr int kMaxDims = 16;
constexpr uint64_t kMaxBroadcastElements = 1ull << 24;  // see make_tensor

using K = Value::Kind;

ValuePtr leaf(K k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

struct StorageType {
  const char* name;
  DType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DType::F32}, {"HalfStorage", DType::F16},  {"BFloat16Storage", DType::BF16},
    {"DoubleStorage", DType::F64}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16},  {"CharStorage", DType::I8},  {"ByteStorage", DType::U8},
    {"BoolStorage", DType::Bool},
};

class Machine {
 public:
  Machine(std::span<const uint8_t> pkl, const ZipArchive* zip, const std::string& prefix, const std::string& name)
      : p_(pkl), zip_(zip), prefix_(prefix), name_(name) {}

  ValuePtr run();

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(name_ + ": pickle offset " + std::to_string(op_pos_) + ": " + msg);
  }
  const uint8_t* take(uint64_t n) {
    if (n > p_.size() - pos_) fail("truncated pickle (needs " + std::to_string(n) + " more bytes)");
    const uint8_t* r = p_.data() + pos_;
    pos_ += n;
    return r;
  }
  uint64_t uint_le(int n) {
    const uint8_t* b = take(n);
    uint64_t v = 0;
    for (int k = n; k-- > 0;) v = (v << 8) | b[k];
    return v;
  }
  std::string line() {  // text argument of GLOBAL, up to '\n'
    const uint8_t* start = p_.data() + pos_;
    const void* nl = std::memchr(start, '\n', p_.size() - pos_);
    if (!nl) fail("truncated GLOBAL (no newline)");
    std::string s(reinterpret_cast<const char*>(start), (const uint8_t*)nl - start);
    pos_ += s.size() + 1;
    return s;
  }

  void push(ValuePtr v) { stack_.push_back(std::move(v)); }
  ValuePtr pop() {
    if (stack_.empty()) fail("stack underflow");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  ValuePtr& top() {
    if (stack_.empty()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<ValuePtr> pop_mark() {
    if (meta_.empty()) fail("no MARK on the stack");
    std::vector<ValuePtr> items = std::move(stack_);
    stack_ = std::move(meta_.back());
    meta_.pop_back();
    return items;
  }

  // Makes `child` part of `parent`: freezes it and updates the depth.
  void adopt(Value& parent, Value& child) {
    // Classes and storages may sit in tuples (REDUCE arguments, persistent
    // ids) but never reach a list or dict, i.e. the finished tree.
    const bool internal = child.kind == K::Global || child.kind == K::Storage || child.internal;
    if (internal && parent.kind != K::Tuple) fail("a " + child.kind_name() + " used as a plain value");
    parent.internal = parent.internal || internal;
    if (&child == &parent) fail("a container inserted into itself");
    child.frozen = true;
    if (child.depth + 1 > parent.depth) parent.depth = child.depth + 1;
    if (parent.depth > kMaxDepth) fail("containers nested deeper than " + std::to_string(kMaxDepth));
  }
  void mutable_check(const Value& c, K want, const char* op) {
    if (c.kind != want) fail(std::string(op) + " on a " + c.kind_name());
    if (c.frozen) fail(std::string(op) + " on a container that is already nested (unsupported sharing)");
  }
  void append(Value& list, std::vector<ValuePtr>& xs) {
    mutable_check(list, K::List, "APPEND");
    for (auto& x : xs) {
      adopt(list, *x);
      list.items.push_back(std::move(x));
    }
  }
  void set_items(Value& d, std::vector<ValuePtr>& kv) {
    mutable_check(d, K::Dict, "SETITEM");
    if (kv.size() % 2) fail("SETITEMS with an odd number of items");
    auto& index = dict_index_[&d];
    for (size_t k = 0; k < kv.size(); k += 2) {
      Value& key = *kv[k];
      // Built with append: GCC 12 warns falsely on "s" + string.
      std::string tag(1, key.kind == K::Str ? 's' : 'i');
      if (key.kind == K::Str) tag.append(key.s);
      else if (key.kind == K::Int) tag.append(std::to_string(key.i));
      else if (key.kind == K::Bool) tag.append(key.b ? "1" : "0");
      else fail("dict key of unsupported type " + key.kind_name());
      adopt(d, key);
      adopt(d, *kv[k + 1]);
      auto [it, fresh] = index.emplace(tag, d.dict.size());
      if (fresh) d.dict.emplace_back(kv[k], kv[k + 1]);
      else d.dict[it->second].second = kv[k + 1];  // Python semantics: last wins
    }
  }
  // Dicts are indexed by address while they are filled; a new dict may reuse
  // the address of a freed one, so its stale index is dropped here.
  ValuePtr new_dict() {
    auto d = leaf(K::Dict);
    dict_index_.erase(d.get());
    return d;
  }
  ValuePtr make_tuple(std::vector<ValuePtr> xs) {
    auto t = leaf(K::Tuple);
    for (auto& x : xs) adopt(*t, *x);
    t->items = std::move(xs);
    return t;
  }

  ValuePtr global(const std::string& module, const std::string& name);
  ValuePtr reduce(const Value& fn, const Value& args);
  ValuePtr persistent_load(const Value& pid);
  ValuePtr make_tensor(const std::vector<ValuePtr>& a);

  std::span<const uint8_t> p_;
  const ZipArchive* zip_;
  std::string prefix_;
  std::string name_;
  uint64_t pos_ = 0;
  uint64_t op_pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<std::vector<ValuePtr>> meta_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
  std::unordered_map<const Value*, std::unordered_map<std::string, size_t>> dict_index_;
  std::unordered_map<std::string, ValuePtr> storages_;
};

ValuePtr Machine::global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  bool ok = full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
            full == "torch._utils._rebuild_parameter";
  if (module == "torch")
    for (const auto& st : kStorageTypes) ok = ok || name == st.name;
  if (!ok) {
    std::string shown;
    for (char c : full.substr(0, 120)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    fail("refusing pickle GLOBAL '" + shown + "' (only tensors, dicts, lists and OrderedDict are supported)");
  }
  auto g = leaf(K::Global);
  g->s = full;
  return g;
}

ValuePtr Machine::reduce(const Value& fn, const Value& args) {
  if (fn.kind != K::Global) fail("REDUCE on a " + fn.kind_name() + " (not a callable)");
  if (args.kind != K::Tuple) fail("REDUCE arguments are a " + args.kind_name() + ", not a tuple");
  const auto& a = args.items;
  if (fn.s == "collections.OrderedDict") {
    if (!a.empty()) fail("OrderedDict with constructor arguments is not supported");
    auto d = new_dict();
    d->ordered = true;
    return d;
  }
  if (fn.s == "torch._utils._rebuild_tensor_v2") return make_tensor(a);
  if (fn.s == "torch._utils._rebuild_parameter") {
    if (a.size() != 3 || a[0]->kind != K::Tensor) fail("_rebuild_parameter expects (tensor, requires_grad, hooks)");
    return a[0];  // a Parameter is its data for our purposes
  }
  fail("'" + fn.s + "' is not callable here");
}

ValuePtr Machine::persistent_load(const Value& pid) {
  // torch.save's id for a storage: ('storage', torch.<T>Storage, key, location, numel)
  if (pid.kind != K::Tuple || pid.items.size() != 5 || pid.items[0]->kind != K::Str ||
      pid.items[0]->s != "storage")
    fail("unsupported persistent id (expected ('storage', type, key, location, numel))");
  const Value& type = *pid.items[1];
  const Value& key = *pid.items[2];
  const Value& numel = *pid.items[4];
  if (type.kind != K::Global || type.s.rfind("torch.", 0) != 0 || type.s.find("Storage") == std::string::npos)
    fail("persistent id names a " + type.kind_name() + " instead of a storage type");
  if (key.kind != K::Str || key.s.empty() || key.s.size() > 64) fail("persistent id has a bad storage key");
  if (pid.items[3]->kind != K::Str) fail("persistent id has a bad location");
  if (numel.kind != K::Int || numel.i < 0) fail("persistent id has a bad element count");
  DType dt = DType::F32;
  for (const auto& st : kStorageTypes)
    if (type.s == std::string("torch.") + st.name) dt = st.dtype;

  if (auto it = storages_.find(key.s); it != storages_.end()) {
    if (it->second->stor->dtype != dt || it->second->stor->numel != (uint64_t)numel.i)
      fail("storage '" + key.s + "' is declared twice with different types or sizes");
    return it->second;
  }
  if (!zip_) fail("persistent id outside a checkpoint archive");
  const std::string entry = prefix_ + "data/" + key.s;
  const ZipEntry* e = zip_->find(entry);
  if (!e) fail("storage '" + key.s + "' has no zip entry '" + entry + "'");
  auto st = std::make_shared<Storage>();
  st->key = key.s;
  st->dtype = dt;
  st->numel = (uint64_t)numel.i;
  const size_t es = dtype_size(dt);
  if (e->size % es != 0 || e->size / es != st->numel)
    fail("storage '" + key.s + "' declares " + std::to_string(st->numel) + " " + dtype_name(dt) +
         " elements but its entry holds " + std::to_string(e->size) + " bytes");
  st->bytes = zip_->data(*e);
  auto v = leaf(K::Storage);
  v->stor = st;
  storages_[key.s] = v;
  return v;
}

ValuePtr Machine::make_tensor(const std::vector<ValuePtr>& a) {
  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  //                    backward_hooks[, metadata])
  if (a.size() != 6 && a.size() != 7) fail("_rebuild_tensor_v2 expects 6 or 7 arguments");
  if (a[0]->kind != K::Storage) fail("_rebuild_tensor_v2: first argument is a " + a[0]->kind_name() + ", not a storage");
  if (a[1]->kind != K::Int) fail("_rebuild_tensor_v2: storage offset is not an int");
  if (a[2]->kind != K::Tuple || a[3]->kind != K::Tuple) fail("_rebuild_tensor_v2: size and stride must be tuples");
  const auto& sz = a[2]->items;
  const auto& sd = a[3]->items;
  if (sz.size() != sd.size()) fail("_rebuild_tensor_v2: size and stride differ in length");
  if (sz.size() > (size_t)kMaxDims) fail("tensor with more than " + std::to_string(kMaxDims) + " dimensions");
  auto t = std::make_shared<Tensor>();
  t->storage = a[0]->stor;
  t->dtype = t->storage->dtype;
  t->storage_offset = a[1]->i;
  if (t->storage_offset < 0) fail("negative storage offset");
  const uint64_t snumel = t->storage->numel;
  unsigned __int128 numel = 1, last = (unsigned __int128)t->storage_offset;
  for (size_t k = 0; k < sz.size(); ++k) {
    if (sz[k]->kind != K::Int || sd[k]->kind != K::Int) fail("tensor size/stride entries must be ints");
    const int64_t n = sz[k]->i, s = sd[k]->i;
    if (n < 0 || s < 0) fail("negative tensor size or stride");
    t->shape.push_back(n);
    t->strides.push_back(s);
    numel *= (uint64_t)n;
    if (numel > ((unsigned __int128)1 << 62)) fail("huge declared tensor shape");
    if (n > 0) last += (unsigned __int128)(n - 1) * (uint64_t)s;
  }
  if (numel == 0) {
    if ((uint64_t)t->storage_offset > snumel) fail("storage offset past the end of its storage");
  } else if (last >= snumel) {
    fail("tensor " + t->describe() + " at offset " + std::to_string(t->storage_offset) +
         " reaches element " + std::to_string((uint64_t)last) + " of a storage of " + std::to_string(snumel));
  }
  // Zero strides let a tiny storage declare an enormous view; reading it
  // would allocate numel floats. Such broadcast views are legal torch but
  // never a rotation, so cap their size.
  if ((uint64_t)numel > snumel && (uint64_t)numel > kMaxBroadcastElements)
    fail("tensor " + t->describe() + " declares far more elements than its storage holds");
  auto v = leaf(K::Tensor);
  v->tens = t;
  return v;
}

// One switch over the opcodes, each case a few lines: longer than 100 lines
// as a whole, but read case by case; split into functions, the cases would
// only move away from the opcode they implement.
ValuePtr Machine::run() {
  while (true) {
    op_pos_ = pos_;
    const uint8_t op = *take(1);
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t v = *take(1);
        if (v < 2 || v > 5) fail("unsupported pickle protocol " + std::to_string(v));
        break;
      }
      case 0x95: take(8); break;  // FRAME: a framing hint only
      case '}': push(new_dict()); break;
      case ']': push(leaf(K::List)); break;
      case ')': push(leaf(K::Tuple)); break;
      case '(':
        meta_.push_back(std::move(stack_));
        stack_.clear();
        break;
      case 'J': {
        auto v = leaf(K::Int);
        v->i = (int32_t)(uint32_t)uint_le(4);
        push(v);
        break;
      }
      case 'K': case 'M': {
        auto v = leaf(K::Int);
        v->i = (int64_t)uint_le(op == 'K' ? 1 : 2);
        push(v);
        break;
      }
      case 0x8a: case 0x8b: {  // LONG1 / LONG4: little-endian two's complement
        const uint64_t n = uint_le(op == 0x8a ? 1 : 4);
        if (n > 8) fail("integer wider than 64 bits");
        const uint8_t* b = take(n);
        uint64_t u = 0;
        for (uint64_t k = n; k-- > 0;) u = (u << 8) | b[k];
        if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~0ull << (8 * n);  // sign-extend
        auto v = leaf(K::Int);
        v->i = (int64_t)u;
        push(v);
        break;
      }
      case 'X': case 0x8c: case 0x8d: case 'C': case 'B': {
        const int w = op == 0x8c || op == 'C' ? 1 : op == 0x8d ? 8 : 4;
        const uint64_t n = uint_le(w);
        const uint8_t* b = take(n);
        auto v = leaf(op == 'C' || op == 'B' ? K::Bytes : K::Str);
        v->s.assign(reinterpret_cast<const char*>(b), n);
        push(v);
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        const uint8_t* b = take(8);
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
        auto v = leaf(K::Float);
        std::memcpy(&v->f, &u, 8);
        push(v);
        break;
      }
      case 0x88: case 0x89: {
        auto v = leaf(K::Bool);
        v->b = op == 0x88;
        push(v);
        break;
      }
      case 'N': push(leaf(K::None)); break;
      case 0x85: case 0x86: case 0x87: {
        const size_t n = op - 0x84u;
        if (stack_.size() < n) fail("stack underflow");
        std::vector<ValuePtr> xs(stack_.end() - n, stack_.end());
        stack_.resize(stack_.size() - n);
        push(make_tuple(std::move(xs)));
        break;
      }
      case 't': push(make_tuple(pop_mark())); break;
      case 'l': case 'd': {  // LIST / DICT from the items since MARK
        auto items = pop_mark();
        auto c = op == 'l' ? leaf(K::List) : new_dict();
        if (op == 'l') append(*c, items);
        else set_items(*c, items);
        push(c);
        break;
      }
      case 'a': {
        std::vector<ValuePtr> x{pop()};
        append(*top(), x);
        break;
      }
      case 'e': {
        auto xs = pop_mark();
        append(*top(), xs);
        break;
      }
      case 's': {
        std::vector<ValuePtr> kv(2);
        kv[1] = pop();
        kv[0] = pop();
        set_items(*top(), kv);
        break;
      }
      case 'u': {
        auto kv = pop_mark();
        set_items(*top(), kv);
        break;
      }
      case 'q': case 'r': case 0x94: {
        const uint64_t idx = op == 'q' ? uint_le(1) : op == 'r' ? uint_le(4) : memo_.size();
        memo_[idx] = top();
        break;
      }
      case 'h': case 'j': {
        const uint64_t idx = uint_le(op == 'h' ? 1 : 4);
        auto it = memo_.find(idx);
        if (it == memo_.end()) fail("BINGET of memo slot " + std::to_string(idx) + " that was never set");
        push(it->second);
        break;
      }
      case '0': pop(); break;
      case '1': pop_mark(); break;
      case '2': push(top()); break;
      case 'c': {
        std::string module = line();
        std::string name = line();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        ValuePtr name = pop(), module = pop();
        if (module->kind != K::Str || name->kind != K::Str) fail("STACK_GLOBAL needs two strings");
        push(global(module->s, name->s));
        break;
      }
      case 'R': {
        ValuePtr args = pop(), fn = pop();
        push(reduce(*fn, *args));
        break;
      }
      case 'b': {  // BUILD: only OrderedDict attribute state (e.g. _metadata), ignored
        ValuePtr state = pop();
        if (top()->kind != K::Dict || !top()->ordered) fail("BUILD on a " + top()->kind_name());
        break;
      }
      case 'Q': {
        ValuePtr pid = pop();
        push(persistent_load(*pid));
        break;
      }
      case '.': {
        if (stack_.size() != 1 || !meta_.empty()) fail("STOP with a malformed stack");
        ValuePtr r = pop();
        if (r->kind == K::Global || r->kind == K::Storage || r->internal)
          fail("pickle result is or holds a class or storage");
        return r;
      }
      default: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "unsupported pickle opcode 0x%02x", op);
        fail(buf);
      }
    }
  }
}

}  // namespace

ValuePtr parse_pickle(std::span<const uint8_t> pkl, const ZipArchive* zip, const std::string& prefix,
                      const std::string& name) {
  Machine m(pkl, zip, prefix, name);
  return m.run();
}

}  // namespace oscar::torchio
