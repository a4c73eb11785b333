"""The engine's logits against the training framework's on the same tokens.

Loads the committed GGUF into the training script's PyTorch model (through
the project's independent GGUF reader), runs it in float64, and compares
every position's logits with what `oscar-cli --dump-logits` wrote (f32 KV
cache, so only the engine's float32 arithmetic differs).

  check_logits.py BIN_DIR MODEL.gguf TEXT_FILE [--tol 1e-3] [--tokens N]
Exit status 0 when the largest per-position error, relative to that
position's largest |logit|, is within --tol.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "training"))
import gguf_model  # noqa: E402


def read_dump(path):
    with open(path, "rb") as f:
        buf = f.read()
    n, v = struct.unpack_from("<ii", buf, 0)
    ids = np.frombuffer(buf, np.int32, n, 8)
    logits = np.frombuffer(buf, np.float32, n * v, 8 + 4 * n).reshape(n, v)
    return ids, logits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_dir")
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--chars", type=int, default=600, help="prompt length in characters")
    args = ap.parse_args()
    with open(args.text, encoding="utf-8") as f:
        prompt = f.read()[: args.chars]
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "logits.bin")
        r = subprocess.run([os.path.join(args.bin_dir, "oscar-cli"), "-m", args.model, "-p", prompt,
                            "-n", "1", "--temp", "0", "-no-cnv", "-ctk", "f32", "-ctv", "f32",
                            "-t", "2", "--dump-logits", dump],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"oscar-cli failed ({r.returncode}): {r.stderr[-2000:]}")
        ids, engine = read_dump(dump)
    model, _ = gguf_model.load(args.model)
    torch.set_num_threads(2)
    with torch.no_grad():
        ref = model(torch.tensor(ids, dtype=torch.long)[None])[0].numpy()
    if ref.shape != engine.shape:
        sys.exit(f"shape mismatch: engine {engine.shape}, reference {ref.shape}")
    err = np.abs(engine.astype(np.float64) - ref).max(axis=1) / np.abs(ref).max(axis=1)
    agree = (engine.argmax(1) == ref.argmax(1)).mean()
    print(f"{len(ids)} positions, vocab {ref.shape[1]}: max relative error {err.max():.3e} "
          f"(mean {err.mean():.3e}), argmax agreement {agree:.3f}")
    if not err.max() <= args.tol:
        sys.exit(f"FAIL: relative error {err.max():.3e} > {args.tol:g} at position {int(err.argmax())}")
    print("OK")


if __name__ == "__main__":
    main()
