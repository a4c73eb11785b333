// Reads hyper-parameters from the architecture-prefixed metadata keys of a
// converted GGUF ("qwen3.embedding_length", ...) and binds tensors by their
// standard names ("blk.N.attn_q.weight", ...), checking every shape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "model/architecture.h"
#include "model/model.h"
#include "model/metadata_reader.h"
#include "model/rotation_math.h"
#include "quant/kquant_rows16.h"

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
    MetadataReader meta(f_, arch_name + ".");
    read_config(arch, meta);
    if (arch.configure) arch.configure(meta, m_.config_);
    check_layers();
    bind_weights(arch);
  }

 private:
  std::string where() const { return "model " + f_.path() + ": "; }

  void read_config(const Architecture& arch, const MetadataReader& meta) {
    ModelConfig& c = m_.config_;
    c.arch = arch.name;
    c.name = f_.get_string_or("general.name", "");
    c.n_embd = meta.need_int("embedding_length");
    c.n_layer = meta.need_int("block_count");
    require(c.n_layer <= 4096, where() + "block_count " + std::to_string(c.n_layer) + " is implausible");
    require(meta.has("feed_forward_length"), where() + "missing key " + meta.prefix() + "feed_forward_length");
    const std::vector<int> n_ff = meta.per_layer_int("feed_forward_length", c.n_layer, 0);
    c.n_ff = n_ff[0];
    c.n_ctx_train = meta.opt_int("context_length", 2048);
    require(meta.has("attention.head_count"), where() + "missing key " + meta.prefix() + "attention.head_count");
    const std::vector<int> n_head = meta.per_layer_int("attention.head_count", c.n_layer, 0);
    const std::vector<int> n_head_kv = meta.per_layer_int("attention.head_count_kv", c.n_layer, 0);
    const int head_dim_default = c.n_embd / n_head[0];
    const int head_dim = meta.opt_int("attention.key_length", head_dim_default);
    const int head_dim_v = meta.opt_int("attention.value_length", head_dim);
    require(head_dim == head_dim_v, where() + "key_length != value_length is not supported");
    c.rms_eps = (float)meta.opt_float("attention.layer_norm_rms_epsilon", 1e-6);
    require(c.rms_eps > 0 && c.rms_eps < 1, where() + "invalid layer_norm_rms_epsilon");
    const float rope_base = (float)meta.opt_float("rope.freq_base", 10000.0);
    require(rope_base > 1, where() + "invalid rope.freq_base");
    const int rope_dim = meta.opt_int("rope.dimension_count", head_dim);
    // Linear scaling divides every frequency by the factor (positions are
    // interpolated); other schemes are refused rather than run wrongly.
    const std::string scaling = meta.opt_string("rope.scaling.type", "none");
    float freq_scale = 1.0f;
    if (scaling == "linear") {
      const double factor = meta.opt_float("rope.scaling.factor", 1.0);
      require(factor >= 1.0, where() + "rope.scaling.factor must be at least 1");
      freq_scale = (float)(1.0 / factor);
    } else {
      require(scaling == "none" || scaling.empty(), where() + "rope scaling '" + scaling + "' is not supported yet");
    }
    c.layers.assign((size_t)c.n_layer, LayerConfig{});
    for (int i = 0; i < c.n_layer; ++i) {
      LayerConfig& l = c.layers[(size_t)i];
      l.n_head = n_head[(size_t)i];
      l.n_head_kv = n_head_kv[(size_t)i] > 0 ? n_head_kv[(size_t)i] : l.n_head;
      l.head_dim = head_dim;
      l.qk_norm = arch.qk_norm;
      l.qkv_bias = arch.qkv_bias;
      l.rope_base = rope_base;
      l.rope_dim = rope_dim;
      l.rope_style = arch.rope_style;
      l.rope_freq_scale = freq_scale;
      l.n_ff = n_ff[(size_t)i];
    }
  }

  // What every architecture's layers must satisfy, after its own step.
  void check_layers() const {
    const ModelConfig& c = m_.config_;
    for (int i = 0; i < c.n_layer; ++i) {
      const LayerConfig& l = c.layers[(size_t)i];
      const std::string at = where() + "layer " + std::to_string(i) + ": ";
      require(l.n_head_kv > 0 && l.n_head % l.n_head_kv == 0,
              at + "head count " + std::to_string(l.n_head) + " is not a multiple of the KV head count " +
                  std::to_string(l.n_head_kv));
      require(l.head_dim >= 2 && l.head_dim % 2 == 0 && l.head_dim <= 1024,
              at + "head dim must be even and at most 1024, is " + std::to_string(l.head_dim));
      require(l.rope_dim >= 2 && l.rope_dim <= l.head_dim && l.rope_dim % 2 == 0,
              at + "rope dimension " + std::to_string(l.rope_dim) + " invalid for head dim " +
                  std::to_string(l.head_dim));
      require(l.kv_layer < i, at + "shares the KV of a later layer");
      if (l.kv_layer >= 0) {
        const LayerConfig& s = c.layers[(size_t)l.kv_layer];
        require(s.head_dim == l.head_dim && s.n_head_kv == l.n_head_kv && s.kv_layer < 0 &&
                    s.sliding_window == l.sliding_window,
                at + "shares the KV of layer " + std::to_string(l.kv_layer) + ", which has another shape");
      }
    }
  }

  const gguf::TensorInfo& tensor(const std::string& name) const {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    require(t != nullptr, where() + "missing tensor " + name);
    return *t;
  }
  bool has_tensor(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

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

  void bind_weights(const Architecture& arch) {
    ModelConfig& c = m_.config_;
    ModelWeights& w = m_.weights_;
    const gguf::TensorInfo& emb = tensor("token_embd.weight");
    require(emb.shape.size() >= 2, where() + "token_embd.weight must be 2-D");
    c.n_vocab = (int)emb.shape[1];
    const int64_t vocab_meta = f_.get_int_or(arch.name + std::string(".vocab_size"), c.n_vocab);
    require(vocab_meta == c.n_vocab, where() + "vocab_size " + std::to_string(vocab_meta) +
                                         " disagrees with token_embd.weight rows " +
                                         std::to_string(c.n_vocab));
    const uint64_t e = (uint64_t)c.n_embd;
    w.tok_embd = matrix("token_embd.weight", (uint64_t)c.n_vocab, e);
    w.output_norm = vector("output_norm.weight", e);
    if (has_tensor("output.weight")) {
      w.output = matrix("output.weight", (uint64_t)c.n_vocab, e);
    } else {
      c.tied_output = true;
      w.output = w.tok_embd;
    }
    if (c.n_embd_per_layer > 0) {
      const uint64_t p = (uint64_t)c.n_embd_per_layer, all = p * (uint64_t)c.n_layer;
      w.ple_tok_embd = matrix("per_layer_token_embd.weight", (uint64_t)c.n_vocab, all);
      w.ple_model_proj = matrix("per_layer_model_proj.weight", all, e);
      w.ple_proj_norm = vector("per_layer_proj_norm.weight", p);
    }
    w.layers.resize((size_t)c.n_layer);
    for (int i = 0; i < c.n_layer; ++i) {
      LayerConfig& l = c.layers[(size_t)i];
      LayerWeights& lw = w.layers[(size_t)i];
      const std::string p = "blk." + std::to_string(i) + ".";
      require(!has_tensor(p + "ffn_gate_inp.weight"),
              where() + "layer " + std::to_string(i) + " is a mixture-of-experts layer (" + p +
                  "ffn_gate_inp.weight): not supported yet");
      const uint64_t q_w = (uint64_t)(l.n_head * l.head_dim), kv_w = (uint64_t)(l.n_head_kv * l.head_dim);
      const uint64_t ff = (uint64_t)c.ff_of(i);
      const bool own_kv = l.has_own_kv(i);
      lw.attn_norm = vector(p + "attn_norm.weight", e);
      lw.wq = matrix(p + "attn_q.weight", q_w, e);
      if (own_kv) {
        lw.wk = matrix(p + "attn_k.weight", kv_w, e);
        if (arch.optional_v && !has_tensor(p + "attn_v.weight")) l.v_from_k = true;
        else lw.wv = matrix(p + "attn_v.weight", kv_w, e);
      }
      lw.wo = matrix(p + "attn_output.weight", e, q_w);
      if (l.qk_norm) {
        lw.q_norm = vector(p + "attn_q_norm.weight", (uint64_t)l.head_dim);
        if (own_kv) lw.k_norm = vector(p + "attn_k_norm.weight", (uint64_t)l.head_dim);
      }
      if (l.qkv_bias) {
        lw.bq = vector(p + "attn_q.bias", q_w);
        lw.bk = vector(p + "attn_k.bias", kv_w);
        lw.bv = vector(p + "attn_v.bias", kv_w);
      }
      if (l.post_norms) {
        lw.post_attn_norm = vector(p + "post_attention_norm.weight", e);
        lw.post_ffn_norm = vector(p + "post_ffw_norm.weight", e);
      }
      if (l.rope_freq_factors) {
        lw.rope_freqs = vector("rope_freqs.weight", (uint64_t)l.rope_dim / 2);
        for (float f : lw.rope_freqs)
          require(f > 0 && !std::isnan(f),
                  where() + "rope_freqs.weight holds a factor that is not positive");
      }
      if (has_tensor(p + "layer_output_scale.weight")) {
        const std::vector<float> s = vector(p + "layer_output_scale.weight", 1);
        require(std::isfinite(s[0]), where() + p + "layer_output_scale.weight is not finite");
        lw.out_scale = s[0];
      }
      lw.ffn_norm = vector(p + "ffn_norm.weight", e);
      lw.ffn_gate = matrix(p + "ffn_gate.weight", ff, e);
      lw.ffn_up = matrix(p + "ffn_up.weight", ff, e);
      lw.ffn_down = matrix(p + "ffn_down.weight", e, ff);
      if (c.n_embd_per_layer > 0) {
        const uint64_t pl = (uint64_t)c.n_embd_per_layer;
        lw.ple_gate = matrix(p + "inp_gate.weight", pl, e);
        lw.ple_proj = matrix(p + "proj.weight", e, pl);
        lw.ple_post_norm = vector(p + "post_norm.weight", e);
      }
      lw.k_rot = rotation(p + "attn_k_rot.weight", l.head_dim);
      lw.v_rot = rotation(p + "attn_v_rot.weight", l.head_dim);
    }
  }

  Model& m_;
  const gguf::GgufFile& f_;
  const quant::QuantTable& table_;
};

namespace {

// Repacks the Q4_K and Q6_K matrices of a loaded model 16 rows at a time, in
// place (quant/kquant_rows16.h: decode reads them faster on CPUs with the
// kernels). An embedding table is repacked only when it is also the output
// (tied): its lookups then unpack one row (kernels::dequantize_row), while a
// table only looked up gains nothing. A mapped file is never written.
// Returns the bytes repacked.
size_t repack_rows16(gguf::GgufFile& file, ModelWeights& w, const quant::QuantTable& table) {
  if (file.residence() != FileResidence::kLoaded) return 0;
  std::vector<kernels::WeightMatrix*> all = {&w.output, &w.ple_model_proj};
  for (LayerWeights& l : w.layers)
    for (kernels::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.ple_gate,
                                     &l.ple_proj})
      all.push_back(m);
  std::vector<kernels::WeightMatrix*> picked;
  for (kernels::WeightMatrix* m : all) {
    if (m->data && m->data != w.ple_tok_embd.data && table.rows16(m->traits->type) &&
        quant::rows16_fits(m->traits->type, m->rows, m->cols) &&
        std::find_if(picked.begin(), picked.end(), [&](auto* p) { return p->data == m->data; }) == picked.end())
      picked.push_back(m);
  }
  size_t bytes = 0;
  const bool edited = file.edit_loaded_tensors(
      [&](const gguf::TensorInfo& t) {
        const void* at = file.tensor_data(t).data();
        return std::any_of(picked.begin(), picked.end(), [&](auto* p) { return p->data == at; });
      },
      [&](const gguf::TensorInfo& t, uint8_t* bytes_at) {
        const void* at = file.tensor_data(t).data();
        for (kernels::WeightMatrix* p : picked)
          if (p->data == at) {
            quant::repack_rows16_in_place(p->traits->type, bytes_at, p->rows, p->cols);
            bytes += t.n_bytes;
            break;
          }
      });
  if (!edited) return 0;
  // Every view of a repacked tensor learns it (a tied output is tok_embd).
  all.push_back(&w.tok_embd);
  for (kernels::WeightMatrix* m : all)
    for (kernels::WeightMatrix* p : picked)
      if (m->data == p->data) m->rows16 = table.rows16(m->traits->type);
  return bytes;
}

}  // namespace

void Model::release_weights() { file_.drop_resident(); }

void Model::restore_weights() {
  file_.reload();
  repack_rows16(file_, weights_, *table_);
}

std::unique_ptr<Model> Model::load(const std::string& path, const quant::QuantTable& table,
                                   const Logger& log, FileResidence how) {
  std::unique_ptr<Model> m(new Model(gguf::GgufFile::open(path, how)));
  ModelLoader(*m, table).load();
  const size_t repacked = repack_rows16(m->file_, m->weights_, table);
  const ModelConfig& c = m->config();
  int n_sliding = 0, n_shared = 0;
  for (int i = 0; i < c.n_layer; ++i) {
    n_sliding += c.layers[(size_t)i].sliding_window > 0;
    n_shared += !c.layers[(size_t)i].has_own_kv(i);
  }
  std::string extra;
  if (n_sliding > 0)
    extra += " sliding=" + std::to_string(n_sliding) + "/" + std::to_string(c.n_layer) + " window=" +
             std::to_string(c.max_window()) + " head_dim_max=" + std::to_string(c.max_head_dim());
  if (n_shared > 0) extra += " shared_kv_layers=" + std::to_string(n_shared);
  if (c.n_embd_per_layer > 0) extra += " per_layer_embd=" + std::to_string(c.n_embd_per_layer);
  log.info("model: " + c.arch + " '" + c.name + "' layers=" + std::to_string(c.n_layer) +
           " embd=" + std::to_string(c.n_embd) + " heads=" + std::to_string(c.layers[0].n_head) +
           "/" + std::to_string(c.layers[0].n_head_kv) + " head_dim=" +
           std::to_string(c.layers[0].head_dim) + " ff=" + std::to_string(c.n_ff) +
           " vocab=" + std::to_string(c.n_vocab) + extra);
  const double mib = (double)m->file().file_size() / (1 << 20);
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MiB", mib);
  if (m->file().residence() == FileResidence::kLoaded)
    log.info(std::string("weights: ") + size + " read into memory (huge pages requested; --mmap maps the file instead)");
  else if (how == FileResidence::kLoaded)
    log.info(std::string("weights: ") + size + " mapped: not enough free memory for a copy");
  else
    log.info(std::string("weights: ") + size + " mapped from the file (--mmap)");
  if (repacked > 0) {
    std::snprintf(size, sizeof size, "%.1f MiB", (double)repacked / (1 << 20));
    log.info(std::string("weights: ") + size + " of Q4_K/Q6_K repacked 16 rows at a time (rows16 kernels)");
  }
  return m;
}

}  // namespace oscar::model
