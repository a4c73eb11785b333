#!/usr/bin/env bash
# oscar-server under concurrency on the qwen3-0.6b shape (random weights,
# q4_k_m): builds the model if needed, starts the server with 8 slots, runs
# bench.mjs (1/4/8 streams, aggregate ratio, TTFT of a 2,000-token prompt
# while 3 streams decode), stops the server.
#   bash bench/server/run.sh [BUILD_DIR] [extra server flags...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
shift || true
OUT="$ROOT/bench/out"
mkdir -p "$OUT"
MODEL="$OUT/qwen3-0.6b-q4_k_m.gguf"
[ -f "$MODEL" ] || "$BUILD/bin/oscar-mkmodel" --preset qwen3-0.6b --type q4_k_m -o "$MODEL"
LOG="$OUT/server-bench.log"
"$BUILD/bin/oscar-server" -m "$MODEL" -np 8 -c 24576 --host 127.0.0.1 --port 0 "$@" >"$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  grep -q "server ready on" "$LOG" && break
  kill -0 $PID 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
URL=$(grep -o "server ready on http://[0-9.]*:[0-9]*" "$LOG" | sed 's/server ready on //')
grep -E "KV cache|cpu:" "$LOG" || true
node "$ROOT/bench/server/bench.mjs" "$URL" --tokens "${TOKENS:-64}" --prompt-tokens 2000 ${BENCH_ARGS:-}
