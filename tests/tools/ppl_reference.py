"""Independent perplexity for oscar-perplexity's tests.

Usage: ppl_reference.py MODEL.gguf BASE.kld

Reads the KLD base file that `oscar-perplexity --kl-divergence-base` wrote
(its own reader of the format documented in tools/oscar-perplexity/kld_base.h),
re-evaluates every chunk of its tokens with the float64 NumPy transformer in
tests/reference/transformer_ref.py (BOS in place of each chunk's first token
when the file says so), and prints one line of JSON:
  ppl, ppl_err      llama-perplexity's estimate over the scored positions
  max_nll_diff      max |stored nll - reference nll|
  max_logp_diff     max |stored log-prob - reference log-prob| over the vocab
  n_scored          scored positions
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from gguf_min import Gguf  # noqa: E402
from transformer_ref import forward  # noqa: E402


def read_base(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"OSCARKLD", "bad magic"
    version, header_size, n_vocab, n_ctx, first, n_chunks, ltype, flags = struct.unpack_from("<8I", data, 8)
    assert version == 1 and header_size == 64, (version, header_size)
    n_tok = n_chunks * n_ctx
    tokens = np.frombuffer(data, dtype="<i4", count=n_tok, offset=64)
    n_scored = n_ctx - 1 - first
    elt = np.dtype("<f4") if ltype == 0 else np.dtype("<f2")
    rec = np.dtype([("nll", "<f4"), ("logp", elt, (n_vocab,))])
    off = 64 + 4 * n_tok
    assert len(data) == off + n_chunks * n_scored * rec.itemsize, "size"
    recs = np.frombuffer(data, dtype=rec, count=n_chunks * n_scored, offset=off)
    return dict(n_vocab=n_vocab, n_ctx=n_ctx, first=first, n_chunks=n_chunks, bos=bool(flags & 1),
                tokens=tokens, recs=recs.reshape(n_chunks, n_scored))


def main():
    g = Gguf(sys.argv[1])
    b = read_base(sys.argv[2])
    n_ctx, first = b["n_ctx"], b["first"]
    bos = int(g.meta["tokenizer.ggml.bos_token_id"])
    nlls = []
    max_nll_diff = 0.0
    max_logp_diff = 0.0
    for c in range(b["n_chunks"]):
        toks = [int(t) for t in b["tokens"][c * n_ctx:(c + 1) * n_ctx]]
        run = list(toks)
        if b["bos"]:
            run[0] = bos
        logits = forward(g, run).astype(np.float64)
        mx = logits.max(axis=1, keepdims=True)
        lp = logits - (mx + np.log(np.exp(logits - mx).sum(axis=1, keepdims=True)))
        for k, j in enumerate(range(first, n_ctx - 1)):
            nll = -lp[j, toks[j + 1]]
            nlls.append(nll)
            r = b["recs"][c, k]
            max_nll_diff = max(max_nll_diff, abs(float(r["nll"]) - nll))
            max_logp_diff = max(max_logp_diff, float(np.max(np.abs(r["logp"].astype(np.float64) - lp[j]))))
    nlls = np.array(nlls)
    mean = nlls.mean()
    ppl = float(np.exp(mean))
    var = (nlls * nlls).mean() - mean * mean
    err = float(ppl * np.sqrt(var / (len(nlls) - 1)))
    print(json.dumps(dict(ppl=ppl, ppl_err=err, max_nll_diff=max_nll_diff, max_logp_diff=max_logp_diff,
                          n_scored=len(nlls), first_token=int(b["tokens"][0]), bos=bos)))


if __name__ == "__main__":
    main()
