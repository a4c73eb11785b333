#include "server/metrics.h"

#include <cstdio>

namespace oscar::server {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value,
            const char* labels = "") {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n";
  out += std::string("# TYPE ") + name + " " + type + "\n";
  out += std::string(name) + labels + " " + buf + "\n";
}

void sample(std::string& out, const char* name, const char* labels, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  out += std::string(name) + labels + " " + buf + "\n";
}

}  // namespace

std::string render_metrics(const SchedulerStats& s, const HttpCountersSnapshot& http, int n_slots) {
  std::string o;
  metric(o, "llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.",
         (double)s.prompt_tokens_total);
  metric(o, "llamacpp:prompt_seconds_total", "counter", "Prompt process time.", s.prompt_seconds_total);
  metric(o, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
         (double)s.predicted_tokens_total);
  metric(o, "llamacpp:tokens_predicted_seconds_total", "counter", "Predict process time.",
         s.predicted_seconds_total);
  metric(o, "llamacpp:n_decode_total", "counter", "Total number of forward calls.", (double)s.n_decode_total);
  metric(o, "llamacpp:prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         s.prompt_seconds_total > 0 ? s.prompt_tokens_total / s.prompt_seconds_total : 0);
  metric(o, "llamacpp:predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         s.predicted_seconds_total > 0 ? s.predicted_tokens_total / s.predicted_seconds_total : 0);
  metric(o, "llamacpp:requests_processing", "gauge", "Number of requests processing.", s.processing);
  metric(o, "llamacpp:requests_deferred", "gauge", "Number of requests deferred (queued).", s.queue_depth);
  metric(o, "oscar:requests_total", "counter", "HTTP requests received.", (double)http.requests);
  metric(o, "oscar:request_errors_total", "counter", "HTTP requests answered with an error status.",
         (double)http.errors);
  metric(o, "oscar:generation_requests_total", "counter", "Completion requests accepted.",
         (double)http.generations);
  metric(o, "oscar:generations_finished_total", "counter", "Completion requests that ran to their end.",
         (double)http.finished);
  metric(o, "oscar:generations_cancelled_total", "counter",
         "Completion requests cancelled (client gone, or cut by a shutdown).", (double)http.cancelled);
  metric(o, "oscar:generations_failed_total", "counter", "Completion requests that failed.", (double)http.failed);
  metric(o, "oscar:context_shifts_total", "counter",
         "Times a generation that filled its context dropped tokens and went on (--context-shift).",
         (double)s.context_shifts);
  metric(o, "oscar:generations_in_flight", "gauge",
         "Completion requests accepted and not yet ended (accepted = finished + cancelled + failed + in flight).",
         (double)http.in_flight());
  metric(o, "oscar:slots_total", "gauge", "Server slots (parallel sequences).", n_slots);
  o += "# HELP oscar:kv_cells KV cache cells in use (positions x layers) per tier.\n";
  o += "# TYPE oscar:kv_cells gauge\n";
  sample(o, "oscar:kv_cells", "{tier=\"sink\"}", (double)s.kv.sink_cells);
  sample(o, "oscar:kv_cells", "{tier=\"main\"}", (double)s.kv.main_cells);
  sample(o, "oscar:kv_cells", "{tier=\"recent\"}", (double)s.kv.recent_cells);
  metric(o, "oscar:kv_bytes_used", "gauge", "Bytes of K and V held by the cached positions.", (double)s.kv.bytes);
  metric(o, "oscar:kv_bytes_allocated", "gauge", "Bytes allocated for the KV cache.", (double)s.kv_bytes_allocated);
  metric(o, "oscar:kv_pool_positions", "gauge", "Positions the KV pool holds (all slots together).",
         (double)s.kv_pool_positions);
  metric(o, "oscar:kv_pool_used_positions", "gauge", "Positions of the KV pool held by sequences (whole pages).",
         (double)s.kv_pool_used_positions);
  metric(o, "oscar:kv_pool_free_positions", "gauge", "Positions of the KV pool free for new work.",
         (double)(s.kv_pool_positions - s.kv_pool_used_positions));
  metric(o, "oscar:kv_pool_shared_positions", "gauge",
         "Positions of the KV pool in pages listed by more than one slot (a shared prompt prefix, stored once).",
         (double)s.kv_pool_shared_positions);
  metric(o, "oscar:prompt_cache_ram_entries", "gauge", "Conversations kept in host memory (--cache-ram).",
         (double)s.host_cache.entries);
  metric(o, "oscar:prompt_cache_ram_bytes", "gauge", "Bytes of the conversations kept in host memory (--cache-ram).",
         (double)s.host_cache.bytes);
  metric(o, "oscar:prompt_cache_ram_hits_total", "counter",
         "Prompts whose prefix was imported from host memory (--cache-ram).", (double)s.host_cache.hits);
  metric(o, "oscar:kv_bits_per_value", "gauge", "Bits per cached K/V value over all tiers.", s.kv.bits_per_value);
  metric(o, "oscar:kv_main_bits_per_value", "gauge", "Bits per value of the main (quantized) tier.",
         s.kv.main_bits_per_value);
  return o;
}

}  // namespace oscar::server
