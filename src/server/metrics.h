// Prometheus text exposition of the server's counters (GET /metrics), named
// like llama-server's (llamacpp:*) so existing dashboards work, plus the
// OSCAR cache's per-tier usage (oscar:*).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "server/scheduler.h"

namespace oscar::server {

// Counted on the HTTP threads.
struct HttpCounters {
  std::atomic<uint64_t> requests{0};         // every request that reached a route
  std::atomic<uint64_t> errors{0};           // answered with a 4xx/5xx
  std::atomic<uint64_t> generations{0};      // completion requests accepted
};

struct HttpCountersSnapshot {
  uint64_t requests = 0, errors = 0, generations = 0;
};
inline HttpCountersSnapshot snapshot(const HttpCounters& c) {
  return {c.requests.load(), c.errors.load(), c.generations.load()};
}

std::string render_metrics(const SchedulerStats& s, const HttpCountersSnapshot& http, int n_slots);

}  // namespace oscar::server
