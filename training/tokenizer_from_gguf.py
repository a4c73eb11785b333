"""The byte-level BPE tokenizer stored in a GGUF (tokens and merges), as
training/bpe.py's Tokenizer: the fine-tune tokenizes exactly as the base
model was trained, without the base model's work folder."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import bpe  # noqa: E402
import gguf_min  # noqa: E402


def tokens_and_merges(path):
    m = gguf_min.Gguf(path).meta
    return list(m["tokenizer.ggml.tokens"]), [tuple(x.split(" ", 1)) for x in m["tokenizer.ggml.merges"]]


def load(path):
    tokens, merges = tokens_and_merges(path)
    return bpe.Tokenizer(tokens, merges)


def write_json(path, out):
    """tokenizer.json in train.py's format (for export_gguf.py)."""
    tokens, merges = tokens_and_merges(path)
    with open(out, "w") as f:
        json.dump({"tokens": tokens, "merges": [list(x) for x in merges]}, f)
