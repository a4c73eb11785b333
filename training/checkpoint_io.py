"""Checkpoints as several small files (the GPU machine returns files of at
most 16 MB): config.json plus weights-NN.pt, each a slice of the state dict
stored in float32."""
import json
import os

import torch

MAX_BYTES = 14_000_000


def save(model, cfg, out):
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg.to_dict(), f, indent=1)
    chunk, size, n = {}, 0, 0
    items = [(k, v.detach().float().cpu().contiguous()) for k, v in model.state_dict().items()]
    for k, v in items:
        b = v.numel() * 4
        if chunk and size + b > MAX_BYTES:
            torch.save(chunk, os.path.join(out, f"weights-{n:02d}.pt"))
            chunk, size, n = {}, 0, n + 1
        chunk[k] = v
        size += b
    torch.save(chunk, os.path.join(out, f"weights-{n:02d}.pt"))


def load(out):
    """(Config dict, state dict) from a directory written by save()."""
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    state = {}
    for name in sorted(os.listdir(out)):
        if name.startswith("weights-") and name.endswith(".pt"):
            state.update(torch.load(os.path.join(out, name), map_location="cpu"))
    return cfg, state
