"""Checks oscar-server's embeddings against the independent NumPy reference
forward pass (tests/reference/transformer_ref.py, float64).

The reference's final hidden states, after the output norm, come out of its
forward() when the output projection is made the identity. Each server
named on the command line (URL POOLING MODEL.gguf) must then give:
  pooling none: per-token vectors equal to the reference rows, unnormalised,
                and a 400 from /v1/embeddings;
  mean/cls/last: /v1/embeddings the L2-normalised mean / first / last row,
                and /embeddings with embd_normalize -1 the same unnormalised.
Exits non-zero with a message on the first mismatch.
"""
import json
import os
import sys
import urllib.error
import urllib.request

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import transformer_ref  # noqa: E402
from gguf_min import Gguf  # noqa: E402

TEXTS = ["Once upon a time there was a cat.", "The sky is blue", "a"]


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def reference_hidden(g, tokens):
    n_embd = g.tensors["token_embd.weight"].shape[1]
    saved = g.tensors.get("output.weight")
    g.tensors["output.weight"] = np.eye(n_embd)  # forward() then returns norm(h) itself
    try:
        return transformer_ref.forward(g, tokens)
    finally:
        if saved is None:
            del g.tensors["output.weight"]
        else:
            g.tensors["output.weight"] = saved


def close(got, want, what):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        sys.exit(f"{what}: shape {got.shape}, expected {want.shape}")
    err = np.max(np.abs(got - want)) / max(1e-6, np.max(np.abs(want)))
    if not err < 2e-3:
        sys.exit(f"{what}: relative error {err:.3g}\n got  {got.ravel()[:6]}\n want {want.ravel()[:6]}")


def check(url, pooling, model):
    g = Gguf(model)
    for text in TEXTS:
        st, tok = post(url, "/tokenize", {"content": text, "add_special": True})
        assert st == 200, tok
        ref = reference_hidden(g, tok["tokens"])
        what = f"{pooling} {os.path.basename(model)} {text!r}"
        if pooling == "none":
            st, native = post(url, "/embeddings", {"content": text})
            assert st == 200, native
            close(native[0]["embedding"], ref, what + " per-token")
            st, err = post(url, "/v1/embeddings", {"input": text})
            if st != 400 or "not OAI compatible" not in err["error"]["message"]:
                sys.exit(f"{what}: /v1/embeddings with pooling none gave {st} {err}")
            continue
        pooled = {"mean": ref.mean(axis=0), "cls": ref[0], "last": ref[-1]}[pooling]
        st, oai = post(url, "/v1/embeddings", {"input": text})
        assert st == 200, oai
        close(oai["data"][0]["embedding"], pooled / np.linalg.norm(pooled), what + " /v1/embeddings")
        st, raw = post(url, "/embeddings", {"content": text, "embd_normalize": -1})
        assert st == 200, raw
        close(raw[0]["embedding"], [pooled], what + " unnormalised")
    print(f"ok: {pooling} {os.path.basename(model)}")


def main():
    args = sys.argv[1:]
    if not args or len(args) % 3:
        sys.exit("usage: embeddings_reference.py URL POOLING MODEL [URL POOLING MODEL ...]")
    for i in range(0, len(args), 3):
        check(*args[i:i + 3])


if __name__ == "__main__":
    main()
