// The per-token cost of grammar-constrained sampling on the Qwen3 vocabulary
// (151,669 tokens, from testdata/tokenizers/qwen3):
//
//   build/bin/oscar-bench-grammar --benchmark_min_time=0.5
//
// BM_MaskFresh: one whole-vocabulary mask computed from scratch (trie walk,
// no cache) in typical states of a JSON-schema grammar: inside a string
// value (most tokens allowed), after an object key's colon, inside a number.
// BM_SampleConstrained / BM_SampleFree: a full sampler step (top-k 40,
// temperature 0.8) on random logits with and without the grammar, over a
// short generated sequence, so the difference is the overhead per token
// including the fast path and the per-state mask cache.
// BM_CompileSchema: JSON Schema -> GBNF -> parsed grammar for a typical
// schema (10 properties, a nested object, an array, an enum).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_to_gbnf.h"
#include "grammar/token_constraint.h"
#include "grammar/vocab_bytes.h"
#include "sampling/sampler.h"
#include "tokenizer/hf_tokenizer_json.h"

using namespace oscar;

namespace {

const char* kSchema = R"({"type": "object", "additionalProperties": false,
  "required": ["id", "name", "email", "age", "tags", "address", "role", "active", "score", "created"],
  "properties": {
    "id": {"type": "integer", "minimum": 1},
    "name": {"type": "string", "maxLength": 40},
    "email": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z]+\\.[a-z]{2,4}$"},
    "age": {"type": "integer", "minimum": 0, "maximum": 130},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "address": {"type": "object", "required": ["street", "city"], "properties": {
      "street": {"type": "string"}, "city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}},
    "role": {"enum": ["admin", "user", "guest"]},
    "active": {"type": "boolean"},
    "score": {"type": "number"},
    "created": {"type": "string", "format": "date-time"}}})";

struct Fixture {
  std::shared_ptr<const grammar::TokenTrie> trie;
  std::shared_ptr<const grammar::Grammar> g;
  bool ok = false;
  Fixture() {
    const std::string dir = std::string(OSCAR_TEST_DATA) + "/tokenizers/qwen3";
    try {
      tok::Tokenizer t = tok::Tokenizer::from_metadata(
          tok::vocab_metadata_from_hf(dir + "/tokenizer.json", dir + "/tokenizer_config.json"));
      trie = grammar::make_token_trie(t);
      g = std::make_shared<const grammar::Grammar>(
          grammar::parse_gbnf(grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(kSchema))));
      ok = true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_grammar: %s\n", e.what());
    }
  }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

const char* kPrefixes[] = {
    R"({"id": 12, "name": "Ada Lov)",                                   // inside a string
    R"({"id": 12, "name": "Ada", "email": "ada@x.org", "age":)",        // after a colon
    R"({"id": 12, "name": "Ada", "email": "ada@x.org", "age": 3, "tags": [], "address": {"street": "s", "city": "c"}, "role": "user", "active": true, "score": 1.2)",  // in a number
};

void BM_MaskFresh(benchmark::State& st) {
  if (!fx().ok) return st.SkipWithError("Qwen3 tokenizer not found in the test data (testdata/README.md)");
  grammar::TokenConstraint c(fx().g, fx().trie);
  grammar::Matcher m(fx().g);
  // Advance with the prefix's bytes through any tokenization: the mask
  // only depends on the matcher state.
  for (char ch : std::string(kPrefixes[st.range(0)])) {
    bool found = false;
    for (size_t id = 0; id < fx().trie->n_vocab() && !found; ++id)
      if (fx().trie->bytes((int32_t)id) == std::string(1, ch) && c.allows((int32_t)id)) c.accept((int32_t)id), found = true;
    if (!found) return st.SkipWithError("prefix not spellable");
  }
  std::vector<uint64_t> mask;
  size_t allowed = 0;
  for (auto _ : st) {
    c.compute_mask(mask);
    benchmark::DoNotOptimize(mask.data());
  }
  for (uint64_t w : mask) allowed += (size_t)__builtin_popcountll(w);
  st.counters["allowed"] = (double)allowed;
  st.counters["trie_nodes"] = (double)fx().trie->n_nodes();
}
BENCHMARK(BM_MaskFresh)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// One sampler step per iteration over random logits; `constrained` picks
// the grammar. Tokens are fed back, so the grammar walks a real sequence
// (restarted when it completes).
void sample_steps(benchmark::State& st, bool constrained, std::shared_ptr<const grammar::Grammar> g = nullptr) {
  if (!fx().ok) return st.SkipWithError("Qwen3 tokenizer not found in the test data (testdata/README.md)");
  const int n = (int)fx().trie->n_vocab();
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<std::vector<float>> rows(16, std::vector<float>((size_t)n));
  for (auto& r : rows)
    for (auto& x : r) x = d(rng);
  sampling::SamplerSettings s;
  s.seed = 3;
  if (constrained) s.grammar = g ? g : fx().g;
  auto smp = std::make_unique<sampling::Sampler>(s, fx().trie);
  size_t i = 0;
  for (auto _ : st) {
    const int32_t t = smp->sample(rows[i++ % rows.size()].data(), n);
    smp->accept(t);
    if (constrained && fx().trie->is_eog(t)) {
      st.PauseTiming();
      smp = std::make_unique<sampling::Sampler>(s, fx().trie);
      st.ResumeTiming();
    }
  }
}
void BM_SampleFree(benchmark::State& st) { sample_steps(st, false); }
void BM_SampleConstrained(benchmark::State& st) { sample_steps(st, true); }
void BM_SampleJsonObject(benchmark::State& st) {
  static auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(grammar::json_object_gbnf()));
  sample_steps(st, true, g);
}
BENCHMARK(BM_SampleFree)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleJsonObject)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleConstrained)->Unit(benchmark::kMicrosecond);

void BM_CompileSchema(benchmark::State& st) {
  const auto schema = nlohmann::ordered_json::parse(kSchema);
  for (auto _ : st) {
    auto g = grammar::parse_gbnf(grammar::json_schema_to_gbnf(schema));
    benchmark::DoNotOptimize(g.elems.data());
  }
}
BENCHMARK(BM_CompileSchema)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
