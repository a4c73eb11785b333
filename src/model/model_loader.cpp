// Reads hyper-parameters from the architecture-prefixed metadata keys of a
// converted GGUF ("qwen3.embedding_length", ...) and binds tensors by their
// standard names ("blk.N.attn_q.weight", ...), checking every shape.
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "model/architecture.h"
#include "model/model.h"
#include "model/rotation_math.h"

namespace oscar::model {

class ModelLoader {
 public:
  ModelLoader(Model& m, const quant::QuantTable& table) : m_(m), f_(m.file_), table_(table) {}

  void load() {
    m_.table_ = &table_;
    const std::string arch_name = f_.get_string("general.architecture")
                                      .value_or("");
    require(!arch_name.empty(), where() + "missing key general.architecture");
    const Architecture& arch = find_architecture(arch_name);
    prefix_ = arch_name + ".";
    read_config(arch);
    bind_weights();
  }

 private:
  std::string where() const { return "model " + f_.path() + ": "; }

  int64_t need_int(const std::string& key) const {
    auto v = f_.get_int(prefix_ + key);
    require(v.has_value(), where() + "missing key " + prefix_ + key);
    require(*v > 0 && *v < (int64_t(1) << 31),
            where() + "key " + prefix_ + key + " has invalid value " + std::to_string(*v));
    return *v;
  }
  int64_t opt_int(const std::string& key, int64_t def) const {
    auto v = f_.get_int(prefix_ + key);
    if (!v) return def;
    require(*v > 0 && *v < (int64_t(1) << 31),
            where() + "key " + prefix_ + key + " has invalid value " + std::to_string(*v));
    return *v;
  }

  void read_config(const Architecture& arch) {
    ModelConfig& c = m_.config_;
    c.arch = arch.name;
    c.name = f_.get_string_or("general.name", "");
    c.n_embd = (int)need_int("embedding_length");
    c.n_layer = (int)need_int("block_count");
    c.n_ff = (int)need_int("feed_forward_length");
    c.n_ctx_train = (int)opt_int("context_length", 2048);
    const int n_head = (int)need_int("attention.head_count");
    const int n_head_kv = (int)opt_int("attention.head_count_kv", n_head);
    require(n_head % n_head_kv == 0, where() + "attention.head_count " + std::to_string(n_head) +
                                         " is not a multiple of head_count_kv " +
                                         std::to_string(n_head_kv));
    const int head_dim_default = c.n_embd / n_head;
    const int head_dim = (int)opt_int("attention.key_length", head_dim_default);
    const int head_dim_v = (int)opt_int("attention.value_length", head_dim);
    require(head_dim == head_dim_v, where() + "key_length != value_length is not supported");
    require(head_dim % 2 == 0 && head_dim <= 1024, where() + "head dim must be even and at most 1024");
    c.rms_eps = (float)f_.get_float_or(prefix_ + "attention.layer_norm_rms_epsilon", 1e-6);
    require(c.rms_eps > 0 && c.rms_eps < 1, where() + "invalid layer_norm_rms_epsilon");
    const float rope_base = (float)f_.get_float_or(prefix_ + "rope.freq_base", 10000.0);
    require(rope_base > 1, where() + "invalid rope.freq_base");
    const int rope_dim = (int)opt_int("rope.dimension_count", head_dim);
    require(rope_dim <= head_dim && rope_dim % 2 == 0,
            where() + "rope.dimension_count " + std::to_string(rope_dim) + " invalid for head dim " +
                std::to_string(head_dim));
    const std::string scaling = f_.get_string_or(prefix_ + "rope.scaling.type", "none");
    require(scaling == "none" || scaling == "",
            where() + "rope scaling '" + scaling + "' is not supported yet");
    c.layers.assign((size_t)c.n_layer, LayerConfig{});
    for (auto& l : c.layers) {
      l.n_head = n_head;
      l.n_head_kv = n_head_kv;
      l.head_dim = head_dim;
      l.qk_norm = arch.qk_norm;
      l.qkv_bias = arch.qkv_bias;
      l.rope_base = rope_base;
      l.rope_dim = rope_dim;
      l.rope_style = arch.rope_style;
    }
  }

  const gguf::TensorInfo& tensor(const std::string& name) const {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    require(t != nullptr, where() + "missing tensor " + name);
    return *t;
  }

  std::string shape_str(const std::vector<uint64_t>& s) const {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }

  void check_shape(const gguf::TensorInfo& t, std::vector<uint64_t> want) const {
    std::vector<uint64_t> got = t.shape;
    while (got.size() > want.size() && got.back() == 1) got.pop_back();
    require(got == want, where() + "tensor " + t.name + " has shape " + shape_str(t.shape) +
                             ", expected " + shape_str(want));
  }

  kernels::WeightMatrix matrix(const std::string& name, uint64_t rows, uint64_t cols) const {
    const gguf::TensorInfo& t = tensor(name);
    check_shape(t, {cols, rows});
    const quant::QuantTraits& q = table_.get(t.type, name.c_str());
    kernels::WeightMatrix w;
    w.traits = &q;
    w.data = f_.tensor_data(t).data();
    w.rows = (int64_t)rows;
    w.cols = (int64_t)cols;
    w.row_bytes = *row_bytes(t.type, cols);
    return w;
  }

  // Small 1-D tensors (norms, biases) are converted to f32 once.
  std::vector<float> vector(const std::string& name, uint64_t n) const {
    const gguf::TensorInfo& t = tensor(name);
    check_shape(t, {n});
    const quant::QuantTraits& q = table_.get(t.type, name.c_str());
    require(n % type_info(t.type).block_size == 0,
            where() + "tensor " + name + " length is not a multiple of its block size");
    std::vector<float> v(n);
    q.dequantize(f_.tensor_data(t).data(), v.data(), (int64_t)n);
    return v;
  }

  // An OSCAR rotation: optional, F32, d x d, orthogonal (max |W W^T - I| <= 1e-3).
  std::vector<float> rotation(const std::string& name, int d) const {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    if (!t) return {};
    require(t->type == TensorType::F32, where() + "rotation " + name + " must be f32, is " + type_name(t->type));
    check_shape(*t, {(uint64_t)d, (uint64_t)d});
    std::vector<float> w((size_t)d * d);
    std::memcpy(w.data(), f_.tensor_data(*t).data(), w.size() * 4);
    const double err = orthogonality_error(w.data(), d);
    require(err <= 1e-3, where() + "rotation " + name + " is not orthogonal (max |W*W^T - I| = " +
                             std::to_string(err) + ")");
    return w;
  }

  void bind_weights() {
    const ModelConfig& c = m_.config_;
    ModelWeights& w = m_.weights_;
    const gguf::TensorInfo& emb = tensor("token_embd.weight");
    require(emb.shape.size() >= 2, where() + "token_embd.weight must be 2-D");
    m_.config_.n_vocab = (int)emb.shape[1];
    const int64_t vocab_meta = f_.get_int_or(prefix_ + "vocab_size", c.n_vocab);
    require(vocab_meta == c.n_vocab, where() + "vocab_size " + std::to_string(vocab_meta) +
                                         " disagrees with token_embd.weight rows " +
                                         std::to_string(c.n_vocab));
    w.tok_embd = matrix("token_embd.weight", (uint64_t)c.n_vocab, (uint64_t)c.n_embd);
    w.output_norm = vector("output_norm.weight", (uint64_t)c.n_embd);
    if (f_.find_tensor("output.weight")) {
      w.output = matrix("output.weight", (uint64_t)c.n_vocab, (uint64_t)c.n_embd);
    } else {
      m_.config_.tied_output = true;
      w.output = w.tok_embd;
    }
    w.layers.resize((size_t)c.n_layer);
    for (int i = 0; i < c.n_layer; ++i) {
      const LayerConfig& l = c.layers[(size_t)i];
      LayerWeights& lw = w.layers[(size_t)i];
      const std::string p = "blk." + std::to_string(i) + ".";
      const uint64_t q_w = (uint64_t)(l.n_head * l.head_dim), kv_w = (uint64_t)(l.n_head_kv * l.head_dim);
      const uint64_t e = (uint64_t)c.n_embd, ff = (uint64_t)c.n_ff;
      lw.attn_norm = vector(p + "attn_norm.weight", e);
      lw.wq = matrix(p + "attn_q.weight", q_w, e);
      lw.wk = matrix(p + "attn_k.weight", kv_w, e);
      lw.wv = matrix(p + "attn_v.weight", kv_w, e);
      lw.wo = matrix(p + "attn_output.weight", e, q_w);
      if (l.qk_norm) {
        lw.q_norm = vector(p + "attn_q_norm.weight", (uint64_t)l.head_dim);
        lw.k_norm = vector(p + "attn_k_norm.weight", (uint64_t)l.head_dim);
      }
      if (l.qkv_bias) {
        lw.bq = vector(p + "attn_q.bias", q_w);
        lw.bk = vector(p + "attn_k.bias", kv_w);
        lw.bv = vector(p + "attn_v.bias", kv_w);
      }
      lw.ffn_norm = vector(p + "ffn_norm.weight", e);
      lw.ffn_gate = matrix(p + "ffn_gate.weight", ff, e);
      lw.ffn_up = matrix(p + "ffn_up.weight", ff, e);
      lw.ffn_down = matrix(p + "ffn_down.weight", e, ff);
      lw.k_rot = rotation(p + "attn_k_rot.weight", l.head_dim);
      lw.v_rot = rotation(p + "attn_v_rot.weight", l.head_dim);
    }
  }

  Model& m_;
  const gguf::GgufFile& f_;
  const quant::QuantTable& table_;
  std::string prefix_;
};

std::unique_ptr<Model> Model::load(const std::string& path, const quant::QuantTable& table,
                                   const Logger& log) {
  std::unique_ptr<Model> m(new Model(gguf::GgufFile::open(path)));
  ModelLoader(*m, table).load();
  const ModelConfig& c = m->config();
  log.info("model: " + c.arch + " '" + c.name + "' layers=" + std::to_string(c.n_layer) +
           " embd=" + std::to_string(c.n_embd) + " heads=" + std::to_string(c.layers[0].n_head) +
           "/" + std::to_string(c.layers[0].n_head_kv) + " head_dim=" +
           std::to_string(c.layers[0].head_dim) + " ff=" + std::to_string(c.n_ff) +
           " vocab=" + std::to_string(c.n_vocab));
  return m;
}

}  // namespace oscar::model
