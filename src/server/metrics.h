// Prometheus text exposition of the server's counters (GET /metrics), named
// like llama-server's (llamacpp:*) so existing dashboards work, plus the
// OSCAR cache's per-tier usage (oscar:*).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "server/scheduler.h"

namespace oscar::server {

// Counted on the HTTP threads. Every accepted generation ends exactly once,
// as finished, cancelled (client gone, or cut by shutdown) or failed, so
// accepted = finished + cancelled + failed + in flight.
struct HttpCounters {
  std::atomic<uint64_t> requests{0};         // every request that reached a route
  std::atomic<uint64_t> errors{0};           // answered with a 4xx/5xx
  std::atomic<uint64_t> generations{0};      // completion requests accepted
  std::atomic<uint64_t> generations_finished{0};
  std::atomic<uint64_t> generations_cancelled{0};
  std::atomic<uint64_t> generations_failed{0};
};

struct HttpCountersSnapshot {
  uint64_t requests = 0, errors = 0, generations = 0;
  uint64_t finished = 0, cancelled = 0, failed = 0;
  uint64_t in_flight() const { return generations - finished - cancelled - failed; }
};
inline HttpCountersSnapshot snapshot(const HttpCounters& c) {
  HttpCountersSnapshot s;
  // Outcomes first, accepted last: a generation ending in between is then
  // counted in both, never in an outcome only, so in_flight() stays >= 0.
  s.finished = c.generations_finished.load();
  s.cancelled = c.generations_cancelled.load();
  s.failed = c.generations_failed.load();
  s.requests = c.requests.load();
  s.errors = c.errors.load();
  s.generations = c.generations.load();
  return s;
}

std::string render_metrics(const SchedulerStats& s, const HttpCountersSnapshot& http, int n_slots);

}  // namespace oscar::server
