#include "kernels/roofline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/huge_pages.h"

namespace oscar::kernels {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double sum_scalar(const float* p, size_t n) {
  float acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
  double s = 0;
  for (float a : acc) s += a;
  return s;
}

double fma_scalar(long iters) {
  float a[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const float m = 0.999999f, c = 1e-7f;
  for (long i = 0; i < iters; ++i)
    for (float& v : a) v = v * m + c;
  return a[0] + a[7];
}

}  // namespace

double measure_read_bandwidth(ThreadPool& pool, const CpuFeatures& cpu, size_t bytes, int reps) {
  const size_t n = bytes / sizeof(float);
  // The same memory as the loaded weights and the KV cache (huge pages), so
  // that the probe is not slowed by TLB misses the engine does not have.
  HugePageBuffer mem = HugePageBuffer::allocate(n * sizeof(float));
  require(mem.data() != nullptr,
          "roofline: cannot allocate " + std::to_string(bytes >> 20) + " MiB to measure bandwidth");
  auto* buf = reinterpret_cast<float*>(mem.data());
  // Touch every page from the thread that will read it (first-touch placement).
  pool.parallel_for(n, 1 << 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) buf[i] = (float)(i & 7) * 0.125f;
  });
  // Two loops, with and without the streaming kernels' software prefetch
  // (core/prefetch.h), the faster kept: on a Zen 5 one
  // thread reads ~15% more without it, and the rows16 GEMV, which
  // prefetches less densely than the old probe, outran a prefetching-only
  // probe (docs/decisions/0010-gemv-streams-and-roofline-probe.md).
  auto sum = [&](const float* p, size_t m, bool prefetch) {
#if defined(OSCAR_X86)
    if (cpu.has_avx512_family()) return sum_bytes_avx512(p, m, prefetch);
    if (cpu.has_avx2_family()) return sum_bytes_avx2(p, m, prefetch);
#endif
    (void)prefetch;
    return sum_scalar(p, m);
  };
  double best = 0;
  std::atomic<double> sink{0};
  for (int r = 0; r < 2 * reps; ++r) {
    const bool prefetch = r % 2 == 0;
    const auto t0 = Clock::now();
    pool.parallel_for(n, 1 << 16, [&](size_t b, size_t e) {
      double s = sum(buf + b, e - b, prefetch);
      double cur = sink.load();
      sink.store(cur + s);
    });
    const double dt = seconds_since(t0);
    best = std::max(best, (double)bytes / dt / 1e9);
  }
  return sink.load() == -1.0 ? 0 : best;
}

double measure_fma_peak(ThreadPool& pool, const CpuFeatures& cpu, int reps, const char** isa) {
  long iters = 2000000;
  int lanes = 8, chains = 8;  // scalar path: 8 independent chains, 1 lane
  double (*fn)(long) = fma_scalar;
  const char* name = "scalar";
  lanes = 1;
#if defined(OSCAR_X86)
  if (cpu.has_avx512_family()) {
    fn = fma_chains_avx512;
    lanes = 16;
    chains = 12;
    name = "avx512";
  } else if (cpu.has_avx2_family()) {
    fn = fma_chains_avx2;
    lanes = 8;
    chains = 12;
    name = "avx2";
  }
#endif
  if (isa) *isa = name;
  double best = 0;
  std::atomic<double> sink{0};
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    pool.run([&](int, int) {
      double v = fn(iters);
      sink.store(sink.load() + v);
    });
    const double dt = seconds_since(t0);
    const double flops = 2.0 * lanes * chains * (double)iters * pool.size();
    best = std::max(best, flops / dt / 1e9);
  }
  return sink.load() == -1.0 ? 0 : best;
}

Roofline measure_roofline(ThreadPool& pool, const CpuFeatures& cpu) {
  Roofline r;
  r.read_gbps = measure_read_bandwidth(pool, cpu);
  r.fma_gflops = measure_fma_peak(pool, cpu, 5, &r.fma_isa);
  return r;
}

}  // namespace oscar::kernels
