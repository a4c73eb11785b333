// Fused attention of one decode token over a deep cache, all layers of a
// model shape, per KV cache type: the part of a decoding step that grows with
// context and that the OSCAR q2_0 cache exists to make cheaper. Each result
// carries the bytes of cached rows read per step, GB/s, and that rate as a
// share of the read bandwidth measured in the same run, so f16 vs q2_0 and
// kernel vs roofline come from one run on this (noisy, shared) machine.
//
//   build/bin/oscar-bench-attention --benchmark_min_time=1
//
// BM_ColdReads is the floor under the cold decode steps: one thread summing
// `streams` runs of `kib` KiB from memory after the caches were flushed, as
// decode at a short depth reads each KV head's rows (16 KiB per head at depth
// 32 for qwen3-0.6b f16). Its GB/s against the probe's per-thread share says
// how much of a cold step's time no kernel can remove.
//
// BM_Q2Encode times the q2_0 row encoder (reference and dispatched).
//
// BM_Scores / BM_ValueSums time the per-row kernels alone on 2048 rows that
// stay in L2 (seconds per row in the "per_row" counter), q2_0 scores with
// the query in float and in integer form, to compare kernels without the
// memory traffic.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "attention/attention.h"
#include "attention/attention_kernels.h"
#include "attention/row_kernels.h"
#include "attention/tile_kernels.h"
#include "core/huge_pages.h"
#include "kernels/roofline.h"
#include "kv/kv_cache.h"
#include "kv/q2_codec.h"

namespace oscar {
namespace {

struct Env {
  CpuFeatures cpu = detect_cpu();
  quant::QuantTable table{cpu};
  ThreadPool pool{0}, pool1{1};
  kernels::Roofline roof;
};

// The attention kernels of this CPU (the engine builds the same table from
// its QuantTable's features).
const attention::AttentionKernels& attn_kernels() {
  static const attention::AttentionKernels k(detect_cpu());
  return k;
}

Env& env() {
  static Env* e = [] {
    auto* e = new Env;
    e->roof = kernels::measure_roofline(e->pool, e->cpu);
    std::printf("cpu: %s\nroofline (%d threads): read %.1f GB/s, fma %.1f GFLOP/s (%s)\n", e->cpu.describe().c_str(),
                e->pool.size(), e->roof.read_gbps, e->roof.fma_gflops, e->roof.fma_isa);
    return e;
  }();
  return *e;
}

struct Shape {
  int layers, heads, kv_heads, head_dim;
};

// Reads words [a, e) of `words` one per cache line and returns their sum:
// what pushes rows out of the caches between timed calls. Only reads, like
// weights: dirty lines written back during a timed call would slow it.
uint64_t read_lines(const uint64_t* words, size_t a, size_t e) {
  uint64_t sum = 0;
  for (size_t i = a; i < e; i += 8) sum += words[i];
  return sum;
}

model::ModelConfig config_of(const Shape& s) {
  model::ModelConfig c;
  c.arch = "bench";
  c.n_layer = s.layers;
  model::LayerConfig l;
  l.n_head = s.heads;
  l.n_head_kv = s.kv_heads;
  l.head_dim = l.rope_dim = s.head_dim;
  c.layers.assign((size_t)s.layers, l);
  return c;
}

// OSCAR's defaults for q2_0 (sink 512, recent 2048, clip K .96 / V .92).
kv::KvCacheConfig cache_config(kv::CacheType t, int depth) {
  kv::KvCacheConfig kc;
  kc.type_k = kc.type_v = t;
  kc.n_ctx_seq = depth + 1;
  if (t == kv::CacheType::Q2_0) {
    kc.hp_sink = 512;
    kc.hp_recent = 2048;
    kc.q2_k.clip_ratio = 0.96f;
    kc.q2_v.clip_ratio = 0.92f;
  }
  return kc;
}

// cold: every layer's call finds its rows out of the caches, as in a real
// decode step, where each layer's weights (8-30 MiB here) stream through the
// caches between two attention calls. Only the attention calls are timed.
// fragmented: the sequence's rows in a unified page pool, every other page
// taken by a second sequence, so each page of 256 positions is a segment of
// its own (the worst case of paging for the fused attention's streams).
void decode_attention(benchmark::State& state, Shape s, kv::CacheType t, bool cold, bool fragmented = false) {
  Env& e = env();
  const int depth = (int)state.range(0);
  // One thread: its CPU time is a usable measure even on a busy machine.
  ThreadPool& pool = state.range(1) == 1 ? e.pool1 : e.pool;
  const model::ModelConfig cfg = config_of(s);
  kv::KvCacheConfig kc = cache_config(t, depth);
  if (fragmented) {
    kc.n_seq = 2;
    kc.pool_positions = 2 * (depth + kc.page_positions);
  }
  kv::KvCache cache(cfg, kc, e.table);
  for (int pos = 0; fragmented && pos < depth; pos += kc.page_positions) {
    cache.reserve(0, pos + 1);
    cache.reserve(1, pos + 1);
  }
  const int kvw = s.kv_heads * s.head_dim, qw = s.heads * s.head_dim;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  // Timing does not depend on the values: cycle through a pool of random rows.
  constexpr int kPool = 509;
  std::vector<float> rows((size_t)(kPool + 1) * kvw);
  for (auto& x : rows) x = nd(rng);
  std::vector<float> k((size_t)kvw), v((size_t)kvw);
  for (int pos = 0, r = 0; pos < depth; ++pos)
    for (int il = 0; il < s.layers; ++il, r = (r + 2) % kPool)
      cache.store(0, il, pos, &rows[(size_t)r * kvw], &rows[(size_t)(r + 1) * kvw]);
  cache.commit(0, depth);

  std::vector<float> q((size_t)qw), out((size_t)qw);
  for (auto& x : q) x = nd(rng) * 0.3f;
  for (auto& x : k) x = nd(rng);
  const int32_t seq = 0, pos = depth;
  const int n_cached = depth;
  attention::BatchView b{1, &seq, &pos, q.data(), k.data(), v.data(), &n_cached};
  // The fastest step beside the mean: on a shared host the mean moves with
  // the neighbours' load, the minimum much less.
  double best_ms = INFINITY;
  using Clock = std::chrono::steady_clock;
  constexpr size_t kEvictBytes = 8u << 20;
  const std::vector<uint64_t> evict(cold ? kEvictBytes / sizeof(uint64_t) : 0, 1);
  for (auto _ : state) {
    Clock::duration step{};
    for (int il = 0; il < s.layers; ++il) {
      if (cold)  // on every thread, as the weights are: the pool stays awake
        pool.parallel_for(evict.size() / 8, 1024, [&](size_t a, size_t e) {
          const uint64_t sum = read_lines(evict.data(), a * 8, e * 8);
          benchmark::DoNotOptimize(sum);
        });
      const auto t0 = Clock::now();
      attention::attend_fused(cfg.layers[(size_t)il], il, cache, b, out.data(), pool, attn_kernels());
      benchmark::DoNotOptimize(out.data());
      step += Clock::now() - t0;
    }
    const double ms = std::chrono::duration<double, std::milli>(step).count();
    if (cold) state.SetIterationTime(ms * 1e-3);
    best_ms = std::min(best_ms, ms);
  }
  state.counters["best_ms"] = best_ms;
  const double bytes = (double)cache.usage(0).bytes;  // K + V rows of `depth` positions, all layers
  state.counters["MiB_per_step"] = bytes / (1 << 20);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["read_bw_GBps"] = e.roof.read_gbps;
  state.counters["step_ms_roofline"] = bytes * 1e-6 / e.roof.read_gbps;  // all threads
}

// A prompt's attention at depth: `tokens` batch tokens (one sequence) over
// `depth` cached positions of one layer, on one thread. The prompt-tile
// kernels and the per-row kernels alternate within each iteration, so both
// see the same machine: "tiles_ms" and "rows_ms" are the best of each, and
// "rows_over_tiles" their ratio.
void BM_PromptAttention(benchmark::State& state, Shape s, kv::CacheType t) {
  Env& e = env();
  const int depth = (int)state.range(0), tokens = 64;
  const model::ModelConfig cfg = config_of(s);
  kv::KvCache cache(cfg, cache_config(t, depth + tokens), e.table);
  const int kvw = s.kv_heads * s.head_dim, qw = s.heads * s.head_dim;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> k((size_t)tokens * kvw), v((size_t)tokens * kvw), q((size_t)tokens * qw),
      out((size_t)tokens * qw);
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  for (auto& x : q) x = nd(rng) * 0.3f;
  for (int pos = 0; pos < depth; ++pos) cache.store(0, 0, pos, &k[(size_t)(pos % tokens) * kvw], &v[(size_t)(pos % tokens) * kvw]);
  cache.commit(0, depth);
  std::vector<int32_t> seq((size_t)tokens, 0), pos((size_t)tokens);
  std::vector<int> n_cached((size_t)tokens, depth);
  for (int i = 0; i < tokens; ++i) pos[(size_t)i] = depth + i;
  const attention::BatchView b{tokens, seq.data(), pos.data(), q.data(), k.data(), v.data(), n_cached.data()};
  using Clock = std::chrono::steady_clock;
  double best[2] = {INFINITY, INFINITY};
  for (auto _ : state)
    for (int tiles = 1; tiles >= 0; --tiles) {
      const auto t0 = Clock::now();
      attention::attend_fused(cfg.layers[0], 0, cache, b, out.data(), e.pool1, attn_kernels(), {tiles == 1});
      benchmark::DoNotOptimize(out.data());
      best[tiles] = std::min(best[tiles], std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  state.counters["tiles_ms"] = best[1];
  state.counters["rows_ms"] = best[0];
  state.counters["rows_over_tiles"] = best[0] / best[1];
}
BENCHMARK_CAPTURE(BM_PromptAttention, qwen3_0_6b_f16, Shape{1, 16, 8, 128}, kv::CacheType::F16)
    ->ArgName("depth")->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PromptAttention, qwen3_0_6b_q2_0, Shape{1, 16, 8, 128}, kv::CacheType::Q2_0)
    ->ArgName("depth")->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PromptAttention, qwen3_4b_f16, Shape{1, 32, 8, 128}, kv::CacheType::F16)
    ->ArgName("depth")->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PromptAttention, gemma4_31b_global_f16, Shape{1, 32, 4, 512}, kv::CacheType::F16)
    ->ArgName("depth")->Arg(4096)->Unit(benchmark::kMillisecond);

struct RowKernelBench {
  static constexpr int kRows = 2048;
  // The block attend_fused uses for these rows: 128 for q2_0's small rows
  // (its kMaxBlock), 32 for f16 (kBlock). The kernels' per-block work (the
  // value sums' weight digits, the epilogues) is part of the per-row cost.
  const int block;
  kv::RowCodec codec;
  size_t stride;
  std::vector<uint8_t> rows;
  std::vector<float> q, tmp, scores, p, acc;
  attention::Q2IntQuery iq[2];  // one per 4 heads (kQ2IntQueryHeads), up to 8
  attention::GroupQuery gq;

  RowKernelBench(kv::CacheType t, int d, int heads, bool integer_query)
      : block(t == kv::CacheType::Q2_0 ? 128 : 32),
        codec(t, d, env().table, kv::Q2Params{0.96f, d}), stride(codec.row_bytes()), rows(stride * kRows),
        q((size_t)heads * d), tmp((size_t)d), scores((size_t)heads * block), p((size_t)heads * block, 0.01f),
        acc((size_t)heads * d), gq{q.data(), heads, d, integer_query ? iq : nullptr} {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> x((size_t)d);
    for (int j = 0; j < kRows; ++j) {
      for (auto& v : x) v = nd(rng);
      codec.encode(x.data(), &rows[(size_t)j * stride]);
    }
    for (auto& v : q) v = nd(rng);
  }
  const uint8_t* rows_at(int j) const { return &rows[(size_t)j * stride]; }
};

void per_row(benchmark::State& state) {
  state.counters["per_row"] = benchmark::Counter(RowKernelBench::kRows, benchmark::Counter::kIsIterationInvariantRate |
                                                                            benchmark::Counter::kInvert);
}

void BM_Scores(benchmark::State& state, kv::CacheType t, bool integer_query) {
  RowKernelBench r(t, (int)state.range(0), (int)state.range(1), integer_query);
  for (auto _ : state)
    for (int j = 0; j < r.kRows; j += r.block) {
      attention::score_rows(attn_kernels(), r.codec, r.rows_at(j), r.stride, r.block, r.gq, 0.1f, r.scores.data(), r.block,
                            r.tmp.data());
      benchmark::DoNotOptimize(r.scores.data());
    }
  per_row(state);
}

void BM_ValueSums(benchmark::State& state, kv::CacheType t) {
  RowKernelBench r(t, (int)state.range(0), (int)state.range(1), false);
  for (auto _ : state)
    for (int j = 0; j < r.kRows; j += r.block) {
      attention::accumulate_rows(attn_kernels(), r.codec, r.rows_at(j), r.stride, r.block, r.p.data(), r.block, r.gq.n_heads,
                                 r.acc.data(), r.tmp.data());
      benchmark::DoNotOptimize(r.acc.data());
    }
  per_row(state);
}

void row_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"d", "heads"})->Args({128, 2})->Args({128, 4})->Args({512, 8});
}
BENCHMARK_CAPTURE(BM_Scores, f16, kv::CacheType::F16, false)->Apply(row_shapes);
BENCHMARK_CAPTURE(BM_Scores, q2_0_float_query, kv::CacheType::Q2_0, false)->Apply(row_shapes);
BENCHMARK_CAPTURE(BM_Scores, q2_0_integer_query, kv::CacheType::Q2_0, true)->Apply(row_shapes);
BENCHMARK_CAPTURE(BM_ValueSums, f16, kv::CacheType::F16)->Apply(row_shapes);
BENCHMARK_CAPTURE(BM_ValueSums, q2_0, kv::CacheType::Q2_0)->Apply(row_shapes);

// The softmax weights of one decode block (`rows` scores of each of `heads`
// heads, in L1) against running maxima: exp_shifted once per head, as the
// fused attention did up to session 23, or exp_shifted_heads for all heads.
void BM_BlockSoftmax(benchmark::State& state, bool all_heads) {
  const int rows = (int)state.range(0), heads = (int)state.range(1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-12.0f, 2.0f);
  std::vector<float> s((size_t)heads * rows), p(s.size()), m((size_t)heads, 1.0f), m_new(m.size()), sums(m.size());
  for (float& v : s) v = u(rng);
  for (auto _ : state) {
    if (all_heads) {
      attention::exp_shifted_heads(attn_kernels(), s.data(), (size_t)rows, heads, m.data(), p.data(), rows, m_new.data(), sums.data());
    } else {
      for (int h = 0; h < heads; ++h)
        sums[(size_t)h] = attention::exp_shifted(attn_kernels(), s.data() + (size_t)h * rows, m[(size_t)h], p.data() + (size_t)h * rows,
                                                 rows, &m_new[(size_t)h]);
    }
    benchmark::DoNotOptimize(p.data());
    benchmark::DoNotOptimize(sums.data());
  }
  state.counters["per_row"] =
      benchmark::Counter(rows, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
void softmax_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "heads"})->Args({128, 4})->Args({32, 4})->Args({128, 8});
}
BENCHMARK_CAPTURE(BM_BlockSoftmax, head_by_head, false)->Apply(softmax_shapes);
BENCHMARK_CAPTURE(BM_BlockSoftmax, all_heads, true)->Apply(softmax_shapes);

// The prompt-tile product (tile_kernels.h) on L1-resident operands: a block
// of `rows` keys of d values against 16 * nv heads (scores, m = rows, kk = d)
// and the value sums (m = d, kk = rows). "fma_share" is its FMA rate as a
// share of the probe's (fma_gflops of the roofline, all threads; this runs
// on one).
void BM_TileGemm(benchmark::State& state, bool values) {
  const attention::detail::TileKernels* k = attn_kernels().tile;
  if (!k) return state.SkipWithError("no SIMD tile kernels on this CPU");
  const int rows = (int)state.range(0), d = (int)state.range(1), nv = (int)state.range(2), lanes = 16 * nv;
  std::vector<float> x((size_t)rows * d, 0.5f), b((size_t)std::max(rows, d) * lanes, 0.25f),
      c((size_t)std::max(rows, d) * lanes, 0.0f);
  for (auto _ : state) {
    if (values) k->gemm(x.data(), 1, (size_t)d, d, rows, b.data(), (size_t)lanes, nv, c.data(), (size_t)lanes, true, nullptr, 0);
    else k->gemm(x.data(), (size_t)d, 1, rows, d, b.data(), (size_t)lanes, nv, c.data(), (size_t)lanes, false, nullptr, 0);
    benchmark::DoNotOptimize(c.data());
  }
  const double flops = 2.0 * rows * d * lanes;
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["fma_share"] = benchmark::Counter(
      flops * 1e-9 * env().pool.size() / env().roof.fma_gflops, benchmark::Counter::kIsIterationInvariantRate);
}
void tile_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "d", "nv"})->Args({32, 128, 2})->Args({32, 128, 1})->Args({8, 512, 2});
}
BENCHMARK_CAPTURE(BM_TileGemm, scores, false)->Apply(tile_shapes);
BENCHMARK_CAPTURE(BM_TileGemm, values, true)->Apply(tile_shapes);

// One q2_0 row encoded (what every row leaving the recent tier costs, K and
// V, on the thread that stores the batch), by the scalar reference and by
// q2_encode (the SIMD encoder where the CPU has one). OSCAR's default clip
// ratios: 0.96 for K, 0.92 for V.
void BM_Q2Encode(benchmark::State& state, bool reference) {
  const int d = (int)state.range(0);
  const kv::Q2Params p{(float)state.range(1) / 100.0f, d};
  constexpr int kRowsPerPass = 256;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x((size_t)d * kRowsPerPass);
  for (auto& v : x) v = nd(rng);
  std::vector<uint8_t> out(kv::q2_row_bytes(d, p));
  const kv::Q2Encoder encode(detect_cpu());
  for (auto _ : state)
    for (int r = 0; r < kRowsPerPass; ++r) {
      if (reference) kv::q2_encode_reference(&x[(size_t)r * d], out.data(), d, p);
      else encode(&x[(size_t)r * d], out.data(), d, p);
      benchmark::DoNotOptimize(out.data());
    }
  state.counters["per_row"] =
      benchmark::Counter(kRowsPerPass, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
void encode_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"d", "clip_pct"})->Args({128, 96})->Args({128, 92})->Args({128, 0})->Args({512, 96});
}
BENCHMARK_CAPTURE(BM_Q2Encode, reference, true)->Apply(encode_shapes);
BENCHMARK_CAPTURE(BM_Q2Encode, dispatched, false)->Apply(encode_shapes);

void BM_ColdReads(benchmark::State& state) {
  const size_t stream_bytes = (size_t)state.range(0) << 10, streams = (size_t)state.range(1);
  // Streams 8 MiB apart in a 512 MiB region; each pass starts at a new
  // random offset, so no pass reads what an earlier one left in a cache.
  constexpr size_t kRegion = size_t(512) << 20, kGap = size_t(8) << 20;
  HugePageBuffer mem = HugePageBuffer::allocate(kRegion);
  if (!mem.data()) {
    state.SkipWithError("cannot map the region");
    return;
  }
  mem.commit();
  const std::vector<uint64_t> evict((size_t(64) << 20) / sizeof(uint64_t), 1);
  std::mt19937 rng(3);
  const size_t span = streams * kGap;
  std::uniform_int_distribution<size_t> at(0, (kRegion - span) / kHugePageBytes - 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(read_lines(evict.data(), 0, evict.size()));
    const uint8_t* base = mem.data() + at(rng) * kHugePageBytes;
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t sum = 0;
    for (size_t s = 0; s < streams; ++s)
      sum += read_lines(reinterpret_cast<const uint64_t*>(base + s * kGap), 0, stream_bytes / 8);
    benchmark::DoNotOptimize(sum);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double bytes = (double)(stream_bytes * streams);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["probe_GBps_per_thread"] = env().roof.read_gbps / env().pool.size();
}
BENCHMARK(BM_ColdReads)
    ->ArgNames({"kib", "streams"})
    ->Args({16, 8})
    ->Args({128, 1})
    ->Args({512, 1})
    ->Args({2048, 1})
    ->Args({8192, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Qwen3-0.6B (16 query heads, 8 KV heads) and Qwen3-4B (32 / 8), head dim 128.
const Shape kQwen06{28, 16, 8, 128};
const Shape kQwen4{36, 32, 8, 128};
// Gemma-4-31B's 10 global layers: 32 query heads over 4 KV heads (GQA 8), head dim 512.
const Shape kGemma4Global{10, 32, 4, 512};

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"depth", "threads"})->ArgsProduct({{128, 4096, 16384}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
}

void BM_DecodeAttention(benchmark::State& state, Shape s, kv::CacheType t) { decode_attention(state, s, t, false); }
void BM_DecodeAttentionCold(benchmark::State& state, Shape s, kv::CacheType t) { decode_attention(state, s, t, true); }
void BM_DecodeAttentionPaged(benchmark::State& state, Shape s, kv::CacheType t) {
  decode_attention(state, s, t, false, true);
}

// A decode step at a short depth (the start of a generation), rows from memory.
void cold_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"depth", "threads"})->ArgsProduct({{32, 128, 256, 512}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseManualTime();
}

BENCHMARK_CAPTURE(BM_DecodeAttention, qwen3_0_6b_f16, kQwen06, kv::CacheType::F16)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttentionCold, qwen3_0_6b_f16, kQwen06, kv::CacheType::F16)->Apply(cold_args);
BENCHMARK_CAPTURE(BM_DecodeAttention, qwen3_0_6b_q2_0, kQwen06, kv::CacheType::Q2_0)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttentionPaged, qwen3_0_6b_f16, kQwen06, kv::CacheType::F16)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttentionPaged, qwen3_0_6b_q2_0, kQwen06, kv::CacheType::Q2_0)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttention, qwen3_4b_f16, kQwen4, kv::CacheType::F16)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttention, qwen3_4b_q2_0, kQwen4, kv::CacheType::Q2_0)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttention, gemma4_31b_global_f16, kGemma4Global, kv::CacheType::F16)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeAttention, gemma4_31b_global_q2_0, kGemma4Global, kv::CacheType::Q2_0)->Apply(args);

}  // namespace
}  // namespace oscar

BENCHMARK_MAIN();
