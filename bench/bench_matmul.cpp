// GEMV (decode) and GEMM (prefill, 512 columns) per weight type at the FFN
// shapes of Qwen3-4B (2560x9728 and 9728x2560), one thread and all threads;
// and the layer GEMVs of a whole decode step (decode_gemvs/...), whose many
// small parallel regions stream less well than one big matrix.
// Each result carries GB/s of weight bytes and GFLOP/s; the memory read
// bandwidth and FMA peak measured in the same run are printed first and
// attached as counters, so ratios come from one run on one (noisy) machine.
//
//   build/bin/oscar-bench-kernels --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "core/huge_pages.h"
#include "kernels/matmul.h"
#include "kernels/roofline.h"
#include "quant/kquant_blocks.h"
#include "quant/kquant_rows16.h"

namespace oscar::kernels {
namespace {

// The CPU with its AVX-512 masked off: the kernels a CPU with AVX2 only
// would run, measured on this one.
CpuFeatures avx2_only(CpuFeatures c) {
  c.avx512f = c.avx512bw = c.avx512vl = c.avx512dq = c.avx512vnni = c.avx512vbmi = c.avx512bf16 = false;
  return c;
}

struct Env {
  CpuFeatures cpu = detect_cpu();
  quant::QuantTable table{cpu};
  quant::QuantTable table_avx2{avx2_only(cpu)};
  quant::QuantTable table_scalar{CpuFeatures{}};  // the reference dots
  Roofline roof_all, roof_one;
};

Env& env() {
  static Env* e = [] {
    auto* e = new Env;
    ThreadPool all(0), one(1);
    e->roof_all = measure_roofline(all, e->cpu);
    e->roof_one = measure_roofline(one, e->cpu);
    std::printf("cpu: %s\n", e->cpu.describe().c_str());
    std::printf("roofline (all %d threads): read %.1f GB/s, fma %.1f GFLOP/s (%s)\n", all.size(),
                e->roof_all.read_gbps, e->roof_all.fma_gflops, e->roof_all.fma_isa);
    std::printf("roofline (1 thread):       read %.1f GB/s, fma %.1f GFLOP/s\n",
                e->roof_one.read_gbps, e->roof_one.fma_gflops);
    return e;
  }();
  return *e;
}

// rows x cols normal weights quantized to q's type, rows back to back.
std::vector<uint8_t> random_weights(const quant::QuantTraits& q, int64_t rows, int64_t cols, std::mt19937& rng) {
  const size_t rb = *row_bytes(q.type, (uint64_t)cols);
  std::vector<uint8_t> wq(rb * (size_t)rows);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> row((size_t)cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = nd(rng);
    q.quantize(row.data(), &wq[(size_t)r * rb], cols);
  }
  return wq;
}

// `copies` copies of a matrix back to back in huge pages, as a loaded model
// keeps its weights: in 4 KiB pages a one-matrix GEMV streamed about half as
// fast on two threads (TLB misses, prefetchers stopping at page borders;
// docs/decisions/0009-huge-pages.md). Empty when the memory cannot be mapped.
HugePageBuffer huge_copies(const uint8_t* src, size_t bytes, size_t copies) {
  HugePageBuffer mem = HugePageBuffer::allocate(bytes * copies);
  if (mem.data())
    for (size_t c = 0; c < copies; ++c) std::copy(src, src + bytes, mem.data() + c * bytes);
  return mem;
}

// table: the kernels to run (this CPU's, those of a CPU without AVX-512, or
// the scalar ones); r16: the matrix repacked 16 rows at a time and run
// through these kernels.
void matmul_bench(benchmark::State& state, TensorType t, int64_t rows, int64_t cols, int64_t n_cols, int threads,
                  bool cached, const quant::QuantTable& table, const quant::Rows16Kernels* r16 = nullptr) {
  Env& e = env();
  const quant::QuantTraits* q = table.find(t);
  if (!q) {
    state.SkipWithError("type not registered");
    return;
  }
  const size_t rb = *row_bytes(t, (uint64_t)cols);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  std::vector<uint8_t> wq = random_weights(*q, rows, cols, rng);
  if (r16) quant::repack_rows16_in_place(t, wq.data(), rows, cols);
  // Decode reads weights from DRAM, not from cache: GEMV rotates through
  // enough copies of the matrix (>= 512 MiB) that none is cached when reused.
  // A cached GEMV (the matrix in L2) shows the kernel's compute ceiling.
  const size_t copies = n_cols == 1 && !cached ? std::max<size_t>(1, (512u << 20) / wq.size()) : 1;
  std::vector<float> x((size_t)(cols * n_cols)), y((size_t)(rows * n_cols));
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(threads);
  MatmulScratch scratch;
  const HugePageBuffer mem = huge_copies(wq.data(), wq.size(), copies);
  if (!mem.data()) {
    state.SkipWithError("cannot allocate the weights");
    return;
  }
  const uint8_t* all = mem.data();
  size_t next = 0;
  for (auto _ : state) {
    WeightMatrix w{q, all + next * wq.size(), rows, cols, rb, r16};
    next = (next + 1) % copies;
    matmul(w, x.data(), (size_t)cols, n_cols, y.data(), (size_t)rows, pool, scratch);
    benchmark::ClobberMemory();
  }
  const Roofline& roof = threads == 1 ? e.roof_one : e.roof_all;
  const double bytes = (double)wq.size();
  const double flops = 2.0 * (double)rows * (double)cols * (double)n_cols;
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bw_GB/s"] = roof.read_gbps;
  state.counters["peak_GFLOP/s"] = roof.fma_gflops;
  state.SetLabel(r16 ? r16->name : q->dot_impl);
}

void BM_Matmul(benchmark::State& state, TensorType t, int64_t rows, int64_t cols, int64_t n_cols, int threads,
               bool cached) {
  matmul_bench(state, t, rows, cols, n_cols, threads, cached, env().table);
}

// A repacked matrix through matmul (GEMM: the rows16 GEMM tiles).
void BM_MatmulRows16(benchmark::State& state, const quant::Rows16Kernels* k, TensorType t, int64_t rows, int64_t cols,
                     int64_t n_cols, int threads) {
  matmul_bench(state, t, rows, cols, n_cols, threads, false, env().table, k);
}

// The same with the kernels of a CPU without AVX-512.
void BM_MatmulAvx2(benchmark::State& state, TensorType t, int64_t rows, int64_t cols, int64_t n_cols, int threads,
                   bool cached) {
  matmul_bench(state, t, rows, cols, n_cols, threads, cached, env().table_avx2);
}

// The same with the scalar reference kernels (CpuFeatures{}): against
// gemv_cached/<type> of the same run, what the SIMD kernels buy.
void BM_MatmulScalar(benchmark::State& state, TensorType t, int64_t rows, int64_t cols, int64_t n_cols, int threads,
                     bool cached) {
  matmul_bench(state, t, rows, cols, n_cols, threads, cached, env().table_scalar);
}

// The same GEMV with the rows repacked 16 at a time (quant/kquant_rows16.h,
// what the loader does on CPUs with the kernels): against gemv/<type> and
// gemv_cached/<type> of the same run it shows what the repacking buys. The
// repacked matrix has the file's bytes. Groups are split evenly over the
// threads.
void BM_Rows16Gemv(benchmark::State& state, const quant::Rows16Kernels* k, TensorType type, int64_t rows, int64_t cols,
                   int threads, bool cached) {
  Env& e = env();
  const quant::QuantTraits* q = e.table.find(type);
  const size_t rb = *row_bytes(type, (uint64_t)cols);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  const std::vector<uint8_t> wq = random_weights(*q, rows, cols, rng);
  std::vector<float> x((size_t)cols);
  for (auto& v : x) v = nd(rng);
  const size_t packed_bytes = rb * (size_t)rows;
  const size_t copies = !cached ? std::max<size_t>(1, (512u << 20) / packed_bytes) : 1;
  std::vector<uint8_t> packed(packed_bytes);
  quant::repack_rows16(type, wq.data(), rb, rows, cols, packed.data());
  const HugePageBuffer mem = huge_copies(packed.data(), packed_bytes, copies);
  if (!mem.data()) {
    state.SkipWithError("cannot allocate the weights");
    return;
  }
  const uint8_t* all = mem.data();
  // The given kernels; the scalar ones where this CPU has none.
  const quant::Rows16GemvFn gemv =
      k ? k->gemv : type == TensorType::Q4_K ? quant::gemv_q4_K_rows16_ref : quant::gemv_q6_K_rows16_ref;
  const quant::QuantizeRowFn quantize = k ? k->quantize_act : quant::quantize_q8_K;
  std::vector<quant::BlockQ8_K> act((size_t)(cols / quant::kQK_K));
  std::vector<float> y((size_t)rows);
  ThreadPool pool(threads);
  const int64_t groups = rows / quant::kRows16;
  size_t next = 0;
  for (auto _ : state) {
    const uint8_t* w = all + next * packed_bytes;
    next = (next + 1) % copies;
    quantize(x.data(), act.data(), cols);
    pool.run([&](int t, int n) {
      const int64_t g0 = groups * t / n, g1 = groups * (t + 1) / n;
      if (g1 > g0) gemv(cols, w, g0, g1 - g0, act.data(), &y[(size_t)(g0 * quant::kRows16)]);
    });
    benchmark::ClobberMemory();
  }
  const Roofline& roof = threads == 1 ? e.roof_one : e.roof_all;
  state.counters["GB/s"] = benchmark::Counter((double)wq.size(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bw_GB/s"] = roof.read_gbps;
  state.SetLabel(k ? k->name : "scalar");
}

// The per-layer GEMVs of one decode step in the order the forward pass runs
// them: Q/K/V from one input, the output projection, gate/up from one input,
// down. All Q4_K, the layers' weights back to back in huge pages like a
// loaded model (far more bytes than the caches hold).
// With rows16 set, every matrix is repacked as a loaded model's would be.
void BM_DecodeGemvs(benchmark::State& state, int n_layer, int64_t n_embd, int64_t q_width, int64_t kv_width,
                    int64_t n_ff, int threads, const quant::Rows16Kernels* rows16) {
  Env& e = env();
  const quant::QuantTraits* q = &e.table.get(TensorType::Q4_K);
  struct Shape {
    int64_t rows, cols;
  };
  const Shape shapes[] = {{q_width, n_embd}, {kv_width, n_embd}, {kv_width, n_embd}, {n_embd, q_width},
                          {n_ff, n_embd},    {n_ff, n_embd},     {n_embd, n_ff}};
  size_t layer_bytes = 0;
  for (const Shape& s : shapes) layer_bytes += *row_bytes(TensorType::Q4_K, (uint64_t)s.cols) * (size_t)s.rows;
  HugePageBuffer mem = HugePageBuffer::allocate(layer_bytes * (size_t)n_layer);
  if (!mem.data()) {
    state.SkipWithError("cannot allocate the weights");
    return;
  }
  // One quantized random row, copied everywhere: the data does not change
  // the speed of a k-quant dot.
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  const int64_t widest = std::max({n_embd, q_width, n_ff});
  std::vector<float> tmp((size_t)widest);
  for (auto& v : tmp) v = nd(rng);
  std::vector<uint8_t> row(*row_bytes(TensorType::Q4_K, (uint64_t)widest));
  q->quantize(tmp.data(), row.data(), widest);
  std::vector<WeightMatrix> w;
  size_t off = 0;
  for (int l = 0; l < n_layer; ++l)
    for (const Shape& s : shapes) {
      const size_t rb = *row_bytes(TensorType::Q4_K, (uint64_t)s.cols);
      for (int64_t r = 0; r < s.rows; ++r) std::copy(row.begin(), row.begin() + (long)rb, mem.data() + off + r * rb);
      if (rows16) quant::repack_rows16_in_place(TensorType::Q4_K, mem.data() + off, s.rows, s.cols);
      w.push_back({q, mem.data() + off, s.rows, s.cols, rb, rows16});
      off += rb * (size_t)s.rows;
    }
  std::vector<float> x((size_t)widest, 0.5f), qo((size_t)q_width), ko((size_t)kv_width), vo((size_t)kv_width),
      a((size_t)n_ff), b((size_t)n_ff), y((size_t)n_embd);
  ThreadPool pool(threads);
  MatmulScratch scratch;
  for (auto _ : state) {
    for (int l = 0; l < n_layer; ++l) {
      const WeightMatrix* lw = &w[(size_t)l * 7];
      const MatmulOutput qkv[3] = {{&lw[0], qo.data(), 0}, {&lw[1], ko.data(), 0}, {&lw[2], vo.data(), 0}};
      matmul_shared_input(qkv, 3, x.data(), (size_t)n_embd, 1, pool, scratch);
      matmul(lw[3], qo.data(), (size_t)q_width, 1, y.data(), (size_t)n_embd, pool, scratch);
      const MatmulOutput gate_up[2] = {{&lw[4], a.data(), 0}, {&lw[5], b.data(), 0}};
      matmul_shared_input(gate_up, 2, x.data(), (size_t)n_embd, 1, pool, scratch);
      matmul(lw[6], a.data(), (size_t)n_ff, 1, y.data(), (size_t)n_embd, pool, scratch);
    }
    benchmark::ClobberMemory();
  }
  const Roofline& roof = threads == 1 ? e.roof_one : e.roof_all;
  state.counters["GB/s"] =
      benchmark::Counter((double)layer_bytes * n_layer, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bw_GB/s"] = roof.read_gbps;
  state.SetLabel(rows16 ? rows16->name : q->dot_impl);
}

void register_all() {
  const int all = (int)std::max(1u, std::thread::hardware_concurrency());
  const TensorType types[] = {TensorType::F16, TensorType::Q8_0, TensorType::Q4_K,
                              TensorType::Q6_K};
  const int64_t shapes[][2] = {{2560, 9728}, {9728, 2560}};
  for (TensorType t : types)
    for (auto& s : shapes)
      for (int th : {1, all})
        for (int64_t n : {1, 512}) {
          const std::string name = std::string(n == 1 ? "gemv/" : "gemm512/") + type_name(t) +
                                   "/" + std::to_string(s[0]) + "x" + std::to_string(s[1]) +
                                   "/t" + std::to_string(th);
          auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, s[0], s[1], n, th, false);
          b->Unit(benchmark::kMillisecond)->UseRealTime();
          if (n > 1) b->Iterations(2);
        }
  // Compute ceilings: a 256 KiB-ish matrix per thread that stays in L2.
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (int th : {1, all}) {
      const std::string name = std::string("gemv_cached/") + type_name(t) + "/" + std::to_string(256 * th) +
                               "x2560/t" + std::to_string(th);
      benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, 256 * th, 2560, 1, th, true)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  // One thread, a 256 x 4096 matrix in cache, every K-quant type: this
  // CPU's kernel against the scalar one (was KQuantSimd.GemvThroughputInfo in
  // the unit suite).
  for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    const std::string name = std::string("gemv_cached/") + type_name(t) + "/256x4096/t1";
    benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, 256, 4096, 1, 1, true)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark((name + "/scalar").c_str(), BM_MatmulScalar, t, 256, 4096, 1, 1, true)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  // Every rows16 kernel set this CPU can run (the first is the one matmul
  // uses), with "/avx2" runs of the file-layout GEMVs to compare the AVX2
  // set with.
  for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K}) {
    std::vector<const quant::Rows16Kernels*> ks = quant::rows16_kernel_variants(type, env().cpu);
    if (ks.empty()) ks.push_back(nullptr);
    for (size_t v = 0; v < ks.size(); ++v)
      for (int th : {1, all}) {
        const std::string t = "/t" + std::to_string(th), ty = type_name(type);
        const std::string name = ks[v] ? ks[v]->name : "", isa = name.substr(name.find('-') + 1);  // "avx2"
        const std::string sfx = v == 0 ? t : t + "/" + isa;
        benchmark::RegisterBenchmark(("gemv_rows16/" + ty + "/9728x2560" + sfx).c_str(), BM_Rows16Gemv, ks[v], type,
                                     9728, 2560, th, false)->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("gemv_rows16/" + ty + "/2560x9728" + sfx).c_str(), BM_Rows16Gemv, ks[v], type,
                                     2560, 9728, th, false)->Unit(benchmark::kMillisecond)->UseRealTime();
        // Short rows, as in qwen3-0.6b, whose Q6_K tensors are ffn_down
        // (1024x3072) and the tied output table (151936 rows of 1024; 32768
        // rows stand in for it).
        for (const auto& [r, c] : {std::pair{1024, 3072}, std::pair{32768, 1024}}) {
          const std::string shape = std::to_string(r) + "x" + std::to_string(c);
          benchmark::RegisterBenchmark(("gemv_rows16/" + ty + "/" + shape + sfx).c_str(), BM_Rows16Gemv, ks[v], type, r, c,
                                       th, false)->Unit(benchmark::kMicrosecond)->UseRealTime();
        }
        benchmark::RegisterBenchmark(
            ("gemv_rows16_cached/" + ty + "/" + std::to_string(256 * th) + "x2560" + sfx).c_str(), BM_Rows16Gemv,
            ks[v], type, 256 * th, 2560, th, true)->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("gemm512_rows16/" + ty + "/9728x2560" + sfx).c_str(), BM_MatmulRows16, ks[v],
                                     type, 9728, 2560, 512, th)->Unit(benchmark::kMillisecond)->UseRealTime()
            ->Iterations(2);
        if (v == 0) continue;
        benchmark::RegisterBenchmark(("gemm512/" + ty + "/9728x2560" + sfx).c_str(), BM_MatmulAvx2, type, 9728, 2560,
                                     512, th, false)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
        benchmark::RegisterBenchmark(("gemv/" + ty + "/9728x2560" + sfx).c_str(), BM_MatmulAvx2, type, 9728, 2560, 1,
                                     th, false)->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("gemv_cached/" + ty + "/" + std::to_string(256 * th) + "x2560" + sfx).c_str(),
                                     BM_MatmulAvx2, type, 256 * th, 2560, 1, th, true)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
      }
  }
  // qwen3-0.6b and qwen3-4b layer shapes, in the file's layout and repacked
  // (decode_gemvs_rows16: what a loaded model runs where the CPU has kernels).
  const quant::Rows16Kernels* r16 = quant::rows16_kernels(TensorType::Q4_K, env().cpu);
  std::vector<const quant::Rows16Kernels*> layouts = {nullptr};
  if (r16) layouts.push_back(r16);
  for (const quant::Rows16Kernels* k : layouts) {
    const std::string pre = k ? "decode_gemvs_rows16" : "decode_gemvs";
    for (int th : {1, all}) {
      const std::string t = "/t" + std::to_string(th);
      benchmark::RegisterBenchmark((pre + "/qwen3_0.6b" + t).c_str(), BM_DecodeGemvs, 28, 1024, 2048, 1024, 3072, th,
                                   k)->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark((pre + "/qwen3_4b" + t).c_str(), BM_DecodeGemvs, 36, 2560, 4096, 1024, 9728, th,
                                   k)->Unit(benchmark::kMillisecond)->UseRealTime();
      // Two layers stay in L3: the cost of the parallel regions without
      // waiting on memory (compare t1 and t2).
      benchmark::RegisterBenchmark((pre + "_cached/qwen3_0.6b_2_layers" + t).c_str(), BM_DecodeGemvs, 2, 1024, 2048,
                                   1024, 3072, th, k)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace oscar::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  oscar::kernels::env();
  oscar::kernels::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
