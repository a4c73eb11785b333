#include "bench_report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace oscar::bench {

namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / (double)v.size();
}
// Sample standard deviation, as llama-bench reports (0 for a single sample).
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (double)(v.size() - 1));
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string join_u64(const std::vector<uint64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}
std::string join_f(const std::vector<double>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + fmt("%.6f", v[i]);
  return s;
}

// Field name, JSON value (already encoded), CSV value.
struct Field {
  std::string name, json, csv;
};

std::vector<Field> fields(const ResultRow& r) {
  auto str = [](const char* n, const std::string& v) { return Field{n, json_string(v), json_string(v)}; };
  auto num = [](const char* n, const std::string& v) { return Field{n, v, v}; };
  auto u64 = [&](const char* n, uint64_t v) { return num(n, std::to_string(v)); };
  auto dbl = [&](const char* n, double v) { return num(n, fmt("%.6f", v)); };
  const TestCase& t = r.test;
  return {
      str("build_commit", r.build_commit),
      str("cpu_info", r.cpu_info),
      str("gpu_info", ""),
      str("backends", "CPU"),
      str("model_filename", r.model_filename),
      str("model_type", r.model_type),
      u64("model_size", r.model_size),
      u64("model_n_params", r.model_n_params),
      u64("n_batch", (uint64_t)t.n_batch),
      u64("n_ubatch", (uint64_t)t.n_ubatch),
      u64("n_threads", (uint64_t)t.n_threads),
      str("type_k", kv::cache_type_name(t.type_k)),
      str("type_v", kv::cache_type_name(t.type_v)),
      u64("n_gpu_layers", 0),
      u64("n_prompt", (uint64_t)t.n_prompt),
      u64("n_gen", (uint64_t)t.n_gen),
      u64("n_depth", (uint64_t)t.n_depth),
      str("test_time", r.test_time),
      num("avg_ns", fmt("%.0f", r.avg_ns())),
      num("stddev_ns", fmt("%.0f", r.stddev_ns())),
      dbl("avg_ts", r.avg_ts()),
      dbl("stddev_ts", r.stddev_ts()),
      Field{"samples_ns", "[ " + join_u64(r.samples_ns, ", ") + " ]", json_string(join_u64(r.samples_ns, ";"))},
      Field{"samples_ts", "[ " + join_f(r.samples_ts(), ", ") + " ]", json_string(join_f(r.samples_ts(), ";"))},
      // oscar extras: the same-run limits and memory.
      dbl("read_bw_gbps", r.read_bw_gbps),
      dbl("fma_gflops", r.fma_gflops),
      dbl("bytes_per_token", r.bytes_per_token),
      dbl("flops_per_token", r.flops_per_token),
      dbl("roofline_ts", r.roofline_ts),
      dbl("roofline_share", r.roofline_share()),
      u64("kv_bytes", r.kv_bytes),
      dbl("kv_bits_per_value", r.kv_bits_per_value),
      u64("rss_load_bytes", r.rss_load_bytes),
      u64("rss_end_bytes", r.rss_end_bytes),
      dbl("ratio_to_first", r.ratio_to_first),
      str("sample", r.test.sample),
      str("kv_layout", r.test.kv_layout),
      dbl("pick_ns_per_token", r.pick_ns_per_token),
  };
}

// Pretty: one field per line, indented for an element of a top-level array.
std::string json_object(const ResultRow& r, bool pretty) {
  const auto fs = fields(r);
  std::string s = pretty ? "  {\n" : "{";
  for (size_t i = 0; i < fs.size(); ++i) {
    s += (pretty ? "    " : "") + json_string(fs[i].name) + ": " + fs[i].json;
    if (i + 1 < fs.size()) s += pretty ? ",\n" : ", ";
  }
  return s + (pretty ? "\n  }" : "}");
}

class JsonPrinter : public Printer {
 public:
  explicit JsonPrinter(std::FILE* out) : out_(out) {}
  void begin() override { std::fputs("[\n", out_); }
  void row(const ResultRow& r) override {
    std::fprintf(out_, "%s%s", first_ ? "" : ",\n", json_object(r, true).c_str());
    first_ = false;
    std::fflush(out_);
  }
  void end() override { std::fputs("\n]\n", out_); }

 private:
  std::FILE* out_;
  bool first_ = true;
};

class JsonlPrinter : public Printer {
 public:
  explicit JsonlPrinter(std::FILE* out) : out_(out) {}
  void row(const ResultRow& r) override {
    std::fprintf(out_, "%s\n", json_object(r, false).c_str());
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
};

class CsvPrinter : public Printer {
 public:
  explicit CsvPrinter(std::FILE* out) : out_(out) {}
  void row(const ResultRow& r) override {
    const auto fs = fields(r);
    if (first_) {
      for (size_t i = 0; i < fs.size(); ++i) std::fprintf(out_, "%s%s", i ? "," : "", fs[i].name.c_str());
      std::fputs("\n", out_);
      first_ = false;
    }
    for (size_t i = 0; i < fs.size(); ++i) std::fprintf(out_, "%s%s", i ? "," : "", fs[i].csv.c_str());
    std::fputs("\n", out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  bool first_ = true;
};

std::string size_label(uint64_t bytes) {
  return bytes >= (1ull << 30) ? fmt("%.2f GiB", (double)bytes / (1ull << 30))
                               : fmt("%.2f MiB", (double)bytes / (1ull << 20));
}
std::string params_label(uint64_t n) {
  return n >= 1000000000ull ? fmt("%.2f B", (double)n / 1e9) : fmt("%.2f M", (double)n / 1e6);
}

// llama-bench's table plus the roofline and memory columns. The limit column
// says which roofline applies: bandwidth for tg, FMA peak for pp.
class MarkdownPrinter : public Printer {
 public:
  explicit MarkdownPrinter(std::FILE* out) : out_(out) {}
  void begin() override {
    std::fputs("| model | size | params | backend | threads | n_batch | n_ubatch | type_k | type_v | test "
               "| t/s | limit | roofline t/s | % roofline | KV MiB | RSS MiB |\n",
               out_);
    std::fputs("| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: "
               "| ---: | ---: | ---: |\n",
               out_);
  }
  void row(const ResultRow& r) override {
    const TestCase& t = r.test;
    const std::string limit = t.n_gen > 0 ? fmt("%.1f GB/s", r.read_bw_gbps) : fmt("%.1f GFLOP/s", r.fma_gflops);
    std::fprintf(out_, "| %s | %s | %s | CPU | %d | %d | %d | %s | %s | %s | %.2f ± %.2f | %s | %.2f | %.1f%% | %.1f | %.1f |\n",
                 r.model_type.c_str(), size_label(r.model_size).c_str(), params_label(r.model_n_params).c_str(),
                 t.n_threads, t.n_batch, t.n_ubatch, kv::cache_type_name(t.type_k), kv::cache_type_name(t.type_v),
                 r.test_name().c_str(), r.avg_ts(), r.stddev_ts(), limit.c_str(), r.roofline_ts,
                 100.0 * r.roofline_share(), (double)r.kv_bytes / (1 << 20), (double)r.rss_end_bytes / (1 << 20));
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
};

// Round i: this row's t/s over the first row's (rounds both have).
std::vector<double> round_ratios(const ResultRow& r, const ResultRow& first) {
  const std::vector<double> a = r.samples_ts(), b = first.samples_ts();
  std::vector<double> out;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) out.push_back(b[i] > 0 ? a[i] / b[i] : 0.0);
  return out;
}

// "| a | b | ... |" and a newline.
std::string fmt_row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const std::string& c : cells) {
    s += ' ';
    s += c;
    s += " |";
  }
  s += '\n';
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void set_ratios_to_first(std::vector<ResultRow>& rows) {
  for (ResultRow& r : rows) r.ratio_to_first = median(round_ratios(r, rows.front()));
}

std::string ratio_table(const std::vector<ResultRow>& rows) {
  if (rows.empty()) return "";
  std::string s = "\nInterleaved: t/s against the first test, round by round\n\n| model file | test | type_k | type_v "
                  "| threads | per round | median |\n| --- | --- | --- | --- | ---: | --- | ---: |\n";
  for (const ResultRow& r : rows) {
    std::string per_round;
    for (double x : round_ratios(r, rows.front())) {
      if (!per_round.empty()) per_round += ' ';
      per_round += fmt("%.3f", x);
    }
    const size_t slash = r.model_filename.find_last_of('/');
    s += fmt_row({slash == std::string::npos ? r.model_filename : r.model_filename.substr(slash + 1), r.test_name(),
                  kv::cache_type_name(r.test.type_k), kv::cache_type_name(r.test.type_v),
                  std::to_string(r.test.n_threads), per_round, fmt("%.3f", r.ratio_to_first)});
  }
  return s;
}

std::vector<double> ResultRow::samples_ts() const {
  std::vector<double> v;
  for (uint64_t ns : samples_ns) v.push_back(ns > 0 ? 1e9 * n_tokens() / (double)ns : 0.0);
  return v;
}
double ResultRow::avg_ns() const {
  std::vector<double> v(samples_ns.begin(), samples_ns.end());
  return mean(v);
}
double ResultRow::stddev_ns() const {
  std::vector<double> v(samples_ns.begin(), samples_ns.end());
  return stddev(v);
}
double ResultRow::avg_ts() const { return mean(samples_ts()); }
double ResultRow::stddev_ts() const { return stddev(samples_ts()); }

std::string ResultRow::test_name() const {
  std::string s = test.n_prompt > 0 ? "pp" + std::to_string(test.n_prompt) : "tg" + std::to_string(test.n_gen);
  if (test.n_depth > 0) s += " @ d" + std::to_string(test.n_depth);
  if (test.sample != "off") s += " +" + test.sample.substr(test.sample.find_last_of('/') + 1);
  if (test.kv_layout != "split") s += " [" + test.kv_layout + "]";
  return s;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) o += fmt("\\u%04x", c);
        else o += (char)c;
    }
  }
  return o + "\"";
}

std::unique_ptr<Printer> make_printer(OutputFormat f, std::FILE* out) {
  switch (f) {
    case OutputFormat::Json: return std::make_unique<JsonPrinter>(out);
    case OutputFormat::Jsonl: return std::make_unique<JsonlPrinter>(out);
    case OutputFormat::Csv: return std::make_unique<CsvPrinter>(out);
    case OutputFormat::Markdown: break;
  }
  return std::make_unique<MarkdownPrinter>(out);
}

std::string profile_table(const ResultRow& r, const runtime::StepProfile& p,
                          const std::array<double, runtime::StepProfile::kCount>& weight_bytes) {
  using runtime::StepProfile;
  const double evals = (double)std::max<int64_t>(1, p.evals), total = p.total_seconds();
  const bool tg = r.test.n_gen > 0;
  char line[256];
  std::snprintf(line, sizeof line, "profile of %s: %lld evals, %.3f ms per eval\n", r.test_name().c_str(),
                (long long)p.evals, 1e3 * total / evals);
  std::string out = line;
  out += "| piece | ms/eval | share | weight MB | GB/s | of probe |\n|---|---:|---:|---:|---:|---:|\n";
  for (int i = 0; i < StepProfile::kCount; ++i) {
    const auto piece = (StepProfile::Piece)i;
    const double s = p.seconds[(size_t)i], b = weight_bytes[(size_t)i];
    std::snprintf(line, sizeof line, "| %s | %.3f | %.1f%% |", StepProfile::name(piece), 1e3 * s / evals,
                  total > 0 ? 100 * s / total : 0.0);
    out += line;
    // Rates only where the piece reads known bytes once per eval: weights,
    // in a decode step.
    if (tg && b > 0 && s > 0) {
      const double gbps = b * evals / s / 1e9;
      std::snprintf(line, sizeof line, " %.1f | %.1f | %.0f%% |\n", b / 1e6, gbps,
                    r.read_bw_gbps > 0 ? 100 * gbps / r.read_bw_gbps : 0.0);
    } else if (b > 0) {
      std::snprintf(line, sizeof line, " %.1f | - | - |\n", b / 1e6);
    } else {
      std::snprintf(line, sizeof line, " - | - | - |\n");
    }
    out += line;
  }
  return out;
}

}  // namespace oscar::bench
