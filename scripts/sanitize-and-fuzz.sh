#!/usr/bin/env bash
# The sanitizer and fuzz part of CI (issue 45), kept to about 15 minutes on
# 2 cores: an ASan + UBSan (clang) build of the server's unit tests and its
# hostile-input tests (tests/server/test_server_hardening.cpp, which run a
# sanitized oscar-server), then every libFuzzer target for a bounded time
# over its committed seed corpus.
#
#   scripts/sanitize-and-fuzz.sh            # FUZZ_SECONDS=20 per target
#   FUZZ_SECONDS=600 scripts/sanitize-and-fuzz.sh   # longer, on demand
#
# A fuzzer crash leaves build-san/fuzz-artifacts/crash-*; make it a
# regression test (fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
BUILD=build-san
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  # -O1 and line tables only: the sanitizers' usual setting, and a quicker build.
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=undefined" -DCMAKE_C_FLAGS="-fno-sanitize-recover=undefined" \
    -DOSCAR_SANITIZE=ON -DOSCAR_BUILD_FUZZ=ON -DOSCAR_BUILD_BENCH=OFF "${LAUNCHER[@]}"
fi
FUZZERS=(http_request_fuzz tokenizer_json_fuzz gguf_reader_fuzz jinja_fuzz torchio_fuzz grammar_fuzz slot_file_fuzz)
cmake --build "$BUILD" -j "$(nproc)" --target test_server_units test_server_hardening oscar-server oscar-mkmodel \
  "${FUZZERS[@]}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
"$BUILD/tests/test_server_units"
"$BUILD/tests/test_server_hardening"

declare -A SEEDS=(
  [http_request_fuzz]=fuzz/corpus/http_request
  [tokenizer_json_fuzz]=fuzz/corpus/tokenizer_json
  [gguf_reader_fuzz]=tests/data/gguf-seeds
  [jinja_fuzz]=fuzz/corpus/jinja
  [torchio_fuzz]=fuzz/corpus/torchio
  [grammar_fuzz]=fuzz/corpus/grammar
  [slot_file_fuzz]=fuzz/corpus/slot_file
)
mkdir -p "$BUILD/fuzz-artifacts"
for f in "${FUZZERS[@]}"; do
  work="$BUILD/fuzz-corpus/$f"
  mkdir -p "$work"
  echo "== $f: ${FUZZ_SECONDS}s over ${SEEDS[$f]}"
  # New inputs go to the scratch corpus; the committed seeds are read only.
  log="$BUILD/fuzz-artifacts/$f.log"
  if ! "$BUILD/bin/$f" "$work" "${SEEDS[$f]}" -max_total_time="$FUZZ_SECONDS" -seed=1 -max_len=65536 \
      -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$BUILD/fuzz-artifacts/$f-" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "$f found a defect: the input is in $BUILD/fuzz-artifacts/ (log: $log)"
    exit 1
  fi
  grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units)" "$log" || true
done
echo "sanitizer tests and fuzzers: clean"
