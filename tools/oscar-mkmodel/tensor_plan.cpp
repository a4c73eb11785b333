#include "tensor_plan.h"

#include <cmath>

namespace oscar::mkmodel {

std::vector<gguf::KeyValue> arch_metadata(const ModelSpec& s) {
  std::vector<gguf::KeyValue> kv;
  const std::string a = s.arch + ".";
  auto add = [&](const std::string& k, gguf::Value v) { kv.push_back({a + k, std::move(v)}); };
  const bool g4 = s.arch == "gemma4";
  add("vocab_size", gguf::Value::u32((uint32_t)s.n_vocab));
  add("context_length", gguf::Value::u32((uint32_t)s.n_ctx));
  add("embedding_length", gguf::Value::u32((uint32_t)s.n_embd));
  add("block_count", gguf::Value::u32((uint32_t)s.n_layer));
  // One width per layer when they differ (gemma4 E2B's double-wide FFN).
  bool same_ff = true;
  for (int i = 0; i < s.n_layer; ++i) same_ff = same_ff && layer_shape(s, i).n_ff == s.n_ff;
  if (same_ff) {
    add("feed_forward_length", gguf::Value::u32((uint32_t)s.n_ff));
  } else {
    std::vector<gguf::Value> per;
    for (int i = 0; i < s.n_layer; ++i) per.push_back(gguf::Value::u32((uint32_t)layer_shape(s, i).n_ff));
    add("feed_forward_length", gguf::Value::array(gguf::ValueType::UINT32, std::move(per)));
  }
  add("attention.head_count", gguf::Value::u32((uint32_t)s.n_head));
  // gemma4 writes one KV head count per layer when global layers differ.
  if (g4 && s.n_head_kv_global > 0 && s.n_head_kv_global != s.n_head_kv) {
    std::vector<gguf::Value> per;
    for (int i = 0; i < s.n_layer; ++i) per.push_back(gguf::Value::u32((uint32_t)layer_shape(s, i).n_head_kv));
    add("attention.head_count_kv", gguf::Value::array(gguf::ValueType::UINT32, std::move(per)));
  } else {
    add("attention.head_count_kv", gguf::Value::u32((uint32_t)s.n_head_kv));
  }
  add("attention.key_length", gguf::Value::u32((uint32_t)s.head_dim));
  add("attention.value_length", gguf::Value::u32((uint32_t)s.head_dim));
  add("attention.layer_norm_rms_epsilon", gguf::Value::f32(s.rms_eps));
  add("rope.freq_base", gguf::Value::f32(s.rope_base));
  add("rope.dimension_count", gguf::Value::u32((uint32_t)s.head_dim));
  if (!is_gemma(s)) return kv;

  if (s.sliding_window > 0) add("attention.sliding_window", gguf::Value::u32((uint32_t)s.sliding_window));
  if (s.final_softcap > 0) add("final_logit_softcapping", gguf::Value::f32(s.final_softcap));
  if (s.arch == "gemma3") {
    // The converter writes no pattern (the loader assumes period 6).
    if (s.sliding_window > 0 && s.swa_period != 6) {
      std::vector<gguf::Value> pat;
      for (int i = 0; i < s.n_layer; ++i) pat.push_back(gguf::Value::boolean(layer_shape(s, i).sliding));
      add("attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL, std::move(pat)));
    }
    if (s.rope_scale_linear > 0) {
      add("rope.scaling.type", gguf::Value::str("linear"));
      add("rope.scaling.factor", gguf::Value::f32(s.rope_scale_linear));
    }
    return kv;
  }
  const int hd_swa = s.head_dim_swa > 0 ? s.head_dim_swa : s.head_dim;
  std::vector<gguf::Value> pat;
  for (int i = 0; i < s.n_layer; ++i) pat.push_back(gguf::Value::boolean(layer_shape(s, i).sliding));
  add("attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL, std::move(pat)));
  add("attention.key_length_swa", gguf::Value::u32((uint32_t)hd_swa));
  add("attention.value_length_swa", gguf::Value::u32((uint32_t)hd_swa));
  add("rope.dimension_count_swa", gguf::Value::u32((uint32_t)hd_swa));
  add("rope.freq_base_swa", gguf::Value::f32(s.rope_base_swa));
  add("attention.shared_kv_layers", gguf::Value::u32((uint32_t)s.n_kv_shared));
  add("embedding_length_per_layer_input", gguf::Value::u32((uint32_t)s.n_embd_per_layer));
  return kv;
}

std::vector<TensorPlan> plan_tensors(const ModelSpec& s) {
  std::vector<TensorPlan> out;
  const uint64_t E = (uint64_t)s.n_embd, V = (uint64_t)s.n_vocab;
  const bool gemma = is_gemma(s), g4 = s.arch == "gemma4";
  // Scales keep activations near unit RMS: fan-in scaled projections, and
  // residual branches shrunk with depth so the stream does not grow.
  const float resid = 1.0f / std::sqrt(2.0f * (float)s.n_layer);
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, int layer, Init init) {
    out.push_back({name, shape, tensor_type_for(s, name, layer, shape[0]), init, {}});
  };
  auto lin = [](uint64_t fan_in, float gain = 1.0f) { return Init{0.0f, gain / std::sqrt((float)fan_in)}; };
  const Init norm{1.0f, 0.1f};
  add("token_embd.weight", {E, V}, -1, Init{0.0f, 1.0f});
  const uint64_t P = (uint64_t)s.n_embd_per_layer, LP = P * (uint64_t)s.n_layer;
  if (g4 && P > 0) {
    add("per_layer_token_embd.weight", {LP, V}, -1, Init{0.0f, 1.0f});
    add("per_layer_model_proj.weight", {E, LP}, -1, lin(E));
    add("per_layer_proj_norm.weight", {P}, -1, norm);
  }
  if (g4) {
    // Proportional RoPE of the global layers: factor 1 for the rotated
    // pairs, 1e30 (no rotation) for the rest, as the converter writes it.
    const int pairs = s.head_dim / 2, rotated = (int)(s.head_dim * s.partial_rotary_global / 2);
    TensorPlan t{"rope_freqs.weight", {(uint64_t)pairs}, TensorType::F32, {}, {}};
    for (int i = 0; i < pairs; ++i) t.values.push_back(i < rotated ? 1.0f : 1e30f);
    out.push_back(t);
  }
  for (int i = 0; i < s.n_layer; ++i) {
    const LayerShape l = layer_shape(s, i);
    const std::string p = "blk." + std::to_string(i) + ".";
    const uint64_t hd = (uint64_t)l.head_dim, F = (uint64_t)l.n_ff;
    const uint64_t qw = (uint64_t)s.n_head * hd, kvw = (uint64_t)l.n_head_kv * hd;
    add(p + "attn_norm.weight", {E}, i, norm);
    add(p + "attn_q.weight", {E, qw}, i, lin(E));
    if (l.own_kv) add(p + "attn_k.weight", {E, kvw}, i, lin(E));
    if (l.has_v) add(p + "attn_v.weight", {E, kvw}, i, lin(E));
    if (s.arch == "qwen2") {
      add(p + "attn_q.bias", {qw}, i, Init{0.0f, 0.1f});
      add(p + "attn_k.bias", {kvw}, i, Init{0.0f, 0.1f});
      add(p + "attn_v.bias", {kvw}, i, Init{0.0f, 0.1f});
    }
    if (s.arch == "qwen3" || gemma) {
      add(p + "attn_q_norm.weight", {hd}, i, norm);
      if (l.own_kv) add(p + "attn_k_norm.weight", {hd}, i, norm);
    }
    add(p + "attn_output.weight", {qw, E}, i, lin(qw, resid));
    if (gemma) add(p + "post_attention_norm.weight", {E}, i, norm);
    add(p + "ffn_norm.weight", {E}, i, norm);
    add(p + "ffn_gate.weight", {E, F}, i, lin(E));
    add(p + "ffn_up.weight", {E, F}, i, lin(E));
    add(p + "ffn_down.weight", {F, E}, i, lin(F, resid));
    if (gemma) add(p + "post_ffw_norm.weight", {E}, i, norm);
    if (g4 && P > 0) {
      add(p + "inp_gate.weight", {E, P}, i, lin(E));
      add(p + "proj.weight", {P, E}, i, lin(P, resid));
      add(p + "post_norm.weight", {E}, i, norm);
    }
    if (g4 && s.layer_out_scale) add(p + "layer_output_scale.weight", {1}, i, Init{1.0f, 0.1f});
  }
  add("output_norm.weight", {E}, -1, norm);
  if (!s.tied_output) add("output.weight", {E, V}, -1, lin(E));
  return out;
}

}  // namespace oscar::mkmodel
