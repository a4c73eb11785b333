#!/usr/bin/env bash
# Slots on disk (issue 36): the size of a saved N-token slot (default 16384)
# and its restore time, f16 against q2_0, on the qwen3-0.6b shape (random
# weights, q4_k_m). Per cache: start oscar-server, fill slot 0 with an
# N-token prompt (/completion, n_predict 1), save it, stop; start a new
# server, restore it (3 times; the file is then in the page cache), stop.
#   bash bench/server/slot_save.sh [BUILD_DIR]      (N=4096 for a quick run)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
N="${N:-16384}"
OUT="$ROOT/bench/out"
SLOTS="$OUT/slots"
mkdir -p "$OUT" "$SLOTS"
MODEL="$OUT/qwen3-0.6b-q4_k_m.gguf"
[ -f "$MODEL" ] || "$BUILD/bin/oscar-mkmodel" --preset qwen3-0.6b --type q4_k_m -o "$MODEL"
PROMPT="$OUT/slot-prompt-$N.json"
python3 -c "
import json, random
random.seed(1)
print(json.dumps({'prompt': [random.randrange(100, 150000) for _ in range($N)], 'n_predict': 1, 'temperature': 0}))" >"$PROMPT"

PID=
start() {  # LOG, flags...
  local log=$1
  shift
  "$BUILD/bin/oscar-server" -m "$MODEL" -np 1 -c $((N + 256)) -t "${THREADS:-2}" --host 127.0.0.1 --port 0 \
    --slot-save-path "$SLOTS" "$@" >"$log" 2>&1 &
  PID=$!
  for _ in $(seq 1 600); do
    grep -q "server ready on" "$log" && break
    kill -0 $PID 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.1
  done
  URL=$(grep -o "server ready on http://[0-9.]*:[0-9]*" "$log" | sed 's/server ready on //')
}
stop() { kill $PID; wait $PID || true; }
trap 'kill $PID 2>/dev/null || true' EXIT

run() {  # NAME, flags...
  local name=$1
  shift
  start "$OUT/slot-$name.log" "$@"
  grep -E "KV cache:" "$OUT/slot-$name.log" | sed 's/^/  /'
  local t0=$(date +%s.%N)
  curl -sf "$URL/completion" -H 'Content-Type: application/json' --data-binary @"$PROMPT" >/dev/null
  echo "  $name: filled $N tokens in $(echo "$(date +%s.%N) - $t0" | bc) s"
  echo "  save:    $(curl -sf -X POST "$URL/slots/0?action=save" -d "{\"filename\":\"$name.bin\"}")"
  stop
  start "$OUT/slot-$name-restore.log" "$@"
  for i in 1 2 3; do
    echo "  restore: $(curl -sf -X POST "$URL/slots/0?action=restore" -d "{\"filename\":\"$name.bin\"}")"
  done
  stop
  ls -l "$SLOTS/$name.bin" | awk '{print "  file: " $5 " bytes"}'
}

run f16 -ctk f16 -ctv f16
run q2_0-seeds -ctk q2_0 -ctv q2_0 --kv-hp-sink 512 --kv-hp-recent 2048
run q2_0-small-tiers -ctk q2_0 -ctv q2_0 --kv-hp-sink 64 --kv-hp-recent 256
