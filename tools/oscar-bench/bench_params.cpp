#include "bench_params.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "kv/cache_type.h"

namespace oscar::bench {

namespace {

std::vector<std::string> split_commas(const std::string& flag, const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (true) {
    const size_t e = s.find(',', b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (out.back().empty()) throw Error(flag + ": empty item in list '" + s + "'");
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

int parse_int(const std::string& flag, const std::string& s, int min_value) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE || v > INT_MAX || v < INT_MIN)
    throw Error(flag + ": '" + s + "' is not an integer");
  if (v < min_value)
    throw Error(flag + ": " + s + " is out of range (must be >= " + std::to_string(min_value) + ")");
  return (int)v;
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& s, int min_value) {
  std::vector<int> out;
  for (const std::string& item : split_commas(flag, s)) out.push_back(parse_int(flag, item, min_value));
  return out;
}

std::vector<kv::CacheType> parse_type_list(const std::string& flag, const std::string& s) {
  std::vector<kv::CacheType> out;
  for (const std::string& item : split_commas(flag, s)) {
    try {
      out.push_back(kv::parse_cache_type(item));
    } catch (const Error& e) {
      throw Error(flag + ": " + e.what());
    }
  }
  return out;
}

}  // namespace

std::string bench_usage() {
  return "usage: oscar-bench -m MODEL [options]\n"
         "Lists are comma-separated; every combination is measured.\n"
         "  -m,   --model FILE[,FILE]     model(s); the flag may be repeated\n"
         "  -p,   --n-prompt N[,N]        prompt tokens per pp test (default 512; 0: none)\n"
         "  -n,   --n-gen N[,N]           generated tokens per tg test (default 128; 0: none)\n"
         "  -d,   --n-depth N[,N]         context depth filled before timing (default 0)\n"
         "  -t,   --threads N[,N]         threads (default: hardware threads)\n"
         "  -ctk, --cache-type-k T[,T]    K cache type: f32 f16 bf16 q8_0 q4_0 q2_0 (default f16)\n"
         "  -ctv, --cache-type-v T[,T]    V cache type (default f16)\n"
         "  -b,   --batch-size N[,N]      logical batch (default 2048)\n"
         "  -ub,  --ubatch-size N[,N]     physical batch (default 512)\n"
         "  -r,   --repetitions N         repetitions per test (default 5)\n"
         "  -o,   --output md|json|jsonl|csv  output format (default md)\n"
         "        --seed N                seed of the random token ids (default 42)\n"
         "        --bw-mib N              buffer of the bandwidth measurement (default 512;\n"
         "                                keep it far above the last-level cache)\n"
         "        --no-warmup             skip the untimed warm-up run\n"
         "  -mmp, --mmap 0|1              1: map the model file instead of reading it into memory\n"
         "                                (default 0: read, with huge pages where the kernel allows)\n"
         "        --fill model|synthetic  how the depth is filled: the model over random tokens (default),\n"
         "                                or random K/V rows stored into the cache (fast; decode timing\n"
         "                                does not depend on the values)\n"
         "  -v,   --verbose               progress on stderr\n"
         "        --profile               time per piece of a step (attention, each projection,\n"
         "                                logits) on stderr after each test\n"
         "        --interleave            set every test up first, then run repetition r of all tests\n"
         "                                in turn (round r), so ratios between tests are not skewed by\n"
         "                                the machine's drift; prints each test's t/s against the first\n"
         "                                test's, round by round (all caches are held at once)\n"
         "        --sample MODE[,MODE]    how tg tests pick each token: off (random ids, as llama-bench;\n"
         "                                default), free (the default sampler chain on the logits), or\n"
         "                                a file: FILE.json a JSON Schema, any other a GBNF grammar\n"
         "                                (the sampler under that grammar, restarted when complete)\n"
         "        --kv-layout L[,L]       split (each sequence's K/V rows contiguous: the layout before the\n"
         "                                pool, default), pool (256-position pages of a unified pool, the\n"
         "                                sequence grown alone) or pool-together (it and a second sequence\n"
         "                                grown a page each in turn)\n"
         "  -h,   --help\n" + tools::kv_usage();
}

BenchParams parse_bench_params(int argc, char** argv) {
  BenchParams p;
  bool seen_m = false;
  tools::apply_kv_env(p.kv);
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(flag + ": missing value");
      return argv[++i];
    };
    if (flag == "-h" || flag == "--help") {
      p.help = true;
    } else if (flag == "-m" || flag == "--model") {
      // The first -m replaces nothing (no default model); later ones append.
      for (const std::string& m : split_commas(flag, value())) p.models.push_back(m);
      seen_m = true;
    } else if (flag == "-p" || flag == "--n-prompt") {
      p.n_prompt = parse_int_list(flag, value(), 0);
    } else if (flag == "-n" || flag == "--n-gen") {
      p.n_gen = parse_int_list(flag, value(), 0);
    } else if (flag == "-d" || flag == "--n-depth") {
      p.n_depth = parse_int_list(flag, value(), 0);
    } else if (flag == "-t" || flag == "--threads") {
      p.n_threads = parse_int_list(flag, value(), 1);
    } else if (flag == "-ctk" || flag == "--cache-type-k") {
      p.type_k = parse_type_list(flag, value());
    } else if (flag == "-ctv" || flag == "--cache-type-v") {
      p.type_v = parse_type_list(flag, value());
    } else if (flag == "-b" || flag == "--batch-size") {
      p.n_batch = parse_int_list(flag, value(), 1);
    } else if (flag == "-ub" || flag == "--ubatch-size") {
      p.n_ubatch = parse_int_list(flag, value(), 1);
    } else if (flag == "-r" || flag == "--repetitions") {
      p.repetitions = parse_int(flag, value(), 1);
    } else if (flag == "-o" || flag == "--output") {
      const std::string v = value();
      if (v == "md") p.output = OutputFormat::Markdown;
      else if (v == "json") p.output = OutputFormat::Json;
      else if (v == "jsonl") p.output = OutputFormat::Jsonl;
      else if (v == "csv") p.output = OutputFormat::Csv;
      else throw Error(flag + ": unknown output format '" + v + "' (md, json, jsonl, csv)");
    } else if (flag == "--seed") {
      p.seed = (unsigned)parse_int(flag, value(), 0);
    } else if (flag == "--bw-mib") {
      p.bw_mib = parse_int(flag, value(), 1);
    } else if (flag == "--fill") {
      const std::string v = value();
      if (v != "model" && v != "synthetic") throw Error("--fill: expected model or synthetic, got '" + v + "'");
      p.fill_synthetic = v == "synthetic";
    } else if (flag == "--no-warmup") {
      p.warmup = false;
    } else if (flag == "-mmp" || flag == "--mmap") {
      p.kv.use_mmap = parse_int(flag, value(), 0) != 0;  // llama-bench's -mmp 0|1
    } else if (flag == "--no-mmap") {
      p.kv.use_mmap = false;
    } else if (flag == "-v" || flag == "--verbose") {
      p.verbose = true;
    } else if (flag == "--profile") {
      p.profile = true;
    } else if (flag == "--interleave") {
      p.interleave = true;
    } else if (flag == "--sample") {
      p.sample = split_commas(flag, value());
    } else if (flag == "--kv-layout") {
      p.kv_layout = split_commas(flag, value());
      for (const std::string& l : p.kv_layout)
        if (l != "split" && l != "pool" && l != "pool-together")
          throw Error("--kv-layout: expected split, pool or pool-together, got '" + l + "'");
    } else if (tools::parse_kv_flag(p.kv, flag, value)) {
    } else {
      throw Error("unknown argument: " + flag + " (see --help)");
    }
  }
  if (p.help) return p;
  if (!seen_m) throw Error("missing -m MODEL (see --help)");
  if (p.n_threads.empty()) p.n_threads = {std::max(1, (int)std::thread::hardware_concurrency())};
  bool any = false;
  for (int v : p.n_prompt) any = any || v > 0;
  for (int v : p.n_gen) any = any || v > 0;
  if (!any) throw Error("-p and -n are all 0: nothing to measure");
  return p;
}

std::vector<TestCase> expand_tests(const BenchParams& p) {
  std::vector<TestCase> out;
  for (const std::string& m : p.models) {
    auto add_all = [&](int n_prompt, int n_gen) {
      // Sampling modes apply to tg tests only (a prompt samples nothing).
      const std::vector<std::string> modes = n_gen > 0 ? p.sample : std::vector<std::string>{"off"};
      for (int d : p.n_depth)
        for (int t : p.n_threads)
          for (kv::CacheType tk : p.type_k)
            for (kv::CacheType tv : p.type_v)
              for (int b : p.n_batch)
                for (int ub : p.n_ubatch)
                  for (const std::string& mode : modes)
                    for (const std::string& layout : p.kv_layout)
                      out.push_back({m, n_prompt, n_gen, d, t, b, ub, tk, tv, mode, layout});
    };
    for (int n : p.n_prompt)
      if (n > 0) add_all(n, 0);
    for (int n : p.n_gen)
      if (n > 0) add_all(0, n);
  }
  return out;
}

}  // namespace oscar::bench
