// Machine limits measured in the same run as a benchmark, so speeds can be
// reported as a share of what this machine, right now, can do: memory read
// bandwidth (GB/s over a buffer far larger than the caches) and FMA peak
// (GFLOP/s of f32 multiply-adds with the widest SIMD the CPU has).
#pragma once

#include <cstddef>

#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace oscar::kernels {

struct Roofline {
  double read_gbps = 0;     // all threads of the pool
  double fma_gflops = 0;    // all threads of the pool
  const char* fma_isa = "";  // which SIMD width the peak was measured with
};

// Reads `bytes` (default 512 MiB) `reps` times with all pool threads and
// returns the best rate.
double measure_read_bandwidth(ThreadPool& pool, const CpuFeatures& cpu, size_t bytes = 512u << 20,
                              int reps = 5);
// Runs independent FMA chains on every thread; returns the best of `reps`.
double measure_fma_peak(ThreadPool& pool, const CpuFeatures& cpu, int reps = 5,
                        const char** isa = nullptr);

Roofline measure_roofline(ThreadPool& pool, const CpuFeatures& cpu);

// ISA-specific pieces (roofline_avx2.cpp / roofline_avx512.cpp).
double sum_bytes_avx2(const float* p, size_t n_floats, bool prefetch);
double sum_bytes_avx512(const float* p, size_t n_floats, bool prefetch);
double fma_chains_avx2(long iters);    // returns a value the caller must use
double fma_chains_avx512(long iters);

}  // namespace oscar::kernels
