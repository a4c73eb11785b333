#!/bin/sh
# Calibrates OSCAR rotations for oscar-tiny (or a model derived from it, e.g.
# a fine-tuned chat version) on its TRAINING text and bakes them into a
# rot-kv GGUF, with the engine's own tools:
#
#   sh training/make_oscar_tiny_rot_kv.sh [IN.gguf] [OUT.gguf] [ROT_DIR] [WORK]
#
# defaults: IN   models/oscar-tiny/oscar-tiny-f16.gguf
#           OUT  models/oscar-tiny/oscar-tiny-rot-kv-f16.gguf
#           ROT_DIR models/oscar-tiny/rotations (k_rotation_qqt_r_h_pbr.pt,
#                v_rotation_sst_r_h_pbr.pt: the published checkpoint schema)
#           WORK /tmp/oscar-tiny (training/make_oscar_tiny.sh's work folder;
#                only its train.txt is needed, made here when missing)
# needs: build/bin/oscar-calibrate and oscar-bake (BIN=... to use others), and
# for a missing train.txt the Debian documentation packages:
#   apt-get install -y debian-handbook python3.11-doc linux-doc-6.1
#
# The calibration text is CALIB_CHUNKS slices of CALIB_CHUNK_BYTES, evenly
# spaced through train.txt (so all three sources count in proportion to
# their share of the training tokens), cut at line ends, with the page
# separators removed. The held-out pages are not in train.txt: the script
# checks that the split it finds is the committed model's (its heldout.txt
# equals models/oscar-tiny/heldout.txt) and stops otherwise.
#
# Deterministic: the same input and machine give bit-identical outputs (one
# fixed thread count, CALIB_THREADS, fixes every summation order).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
IN=${1:-$ROOT/models/oscar-tiny/oscar-tiny-f16.gguf}
OUT=${2:-$ROOT/models/oscar-tiny/oscar-tiny-rot-kv-f16.gguf}
ROT=${3:-$ROOT/models/oscar-tiny/rotations}
WORK=${4:-/tmp/oscar-tiny}
BIN=${BIN:-$ROOT/build/bin}
PY=${PYTHON:-python3}
CHUNKS=${CALIB_CHUNKS:-64}
CHUNK_BYTES=${CALIB_CHUNK_BYTES:-4000}
THREADS=${CALIB_THREADS:-2}
# The model was trained on windows of 1024 tokens, each starting with
# <|endoftext|> (its BOS): calibrate on exactly such sequences, so the
# post-RoPE statistics cover the positions the model is used at.
CTX=${CALIB_CTX:-1024}

for t in oscar-calibrate oscar-bake; do
  [ -x "$BIN/$t" ] || { echo "missing $BIN/$t: build it first (ninja -C build $t)" >&2; exit 1; }
done
mkdir -p "$WORK"
if [ ! -f "$WORK/train.txt" ]; then
  "$PY" "$HERE/prepare_data.py" --out "$WORK"
fi
COMMITTED_HELDOUT=$ROOT/models/oscar-tiny/heldout.txt
if [ -f "$COMMITTED_HELDOUT" ] && ! cmp -s "$WORK/heldout.txt" "$COMMITTED_HELDOUT"; then
  echo "$WORK/heldout.txt differs from $COMMITTED_HELDOUT: the train/held-out split is not the" \
       "committed model's, so train.txt might hold held-out pages; stopping" >&2
  exit 1
fi

"$PY" - "$WORK/train.txt" "$WORK/calib.txt" "$CHUNKS" "$CHUNK_BYTES" <<'PYEOF'
import sys
src, out, n_chunks, chunk_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(src, "rb") as f:
    data = f.read()
stride = len(data) // n_chunks
parts = []
for i in range(n_chunks):
    start = data.index(b"\n", i * stride) + 1 if i else 0
    end = data.index(b"\n", min(len(data) - 1, start + chunk_bytes)) + 1
    # Pages end with the literal <|endoftext|> in train.txt; the calibration
    # tool tokenizes plain text, so a page break becomes a blank line.
    parts.append(data[start:end].replace(b"<|endoftext|>\n", b"\n\n").replace(b"<|endoftext|>", b""))
with open(out, "wb") as f:
    f.write(b"\n".join(parts))
print(f"calibration text: {n_chunks} slices, {sum(map(len, parts))} bytes of {len(data)}")
PYEOF

mkdir -p "$ROT"
"$BIN/oscar-calibrate" -m "$IN" -f "$WORK/calib.txt" --ctx "$CTX" -t "$THREADS" --out "$ROT"
"$BIN/oscar-bake" --base "$IN" --rot-dir "$ROT" --out "$OUT"
sha256sum "$OUT" "$ROT/k_rotation_qqt_r_h_pbr.pt" "$ROT/v_rotation_sst_r_h_pbr.pt"
