"""Writes PyTorch checkpoints (with torch.save) and the values torch reads
back, for the C++ reader's tests. Run with Debian's python3 (python3-torch).

  make_checkpoints.py gen OUTDIR           varied values and tensor layouts
  make_checkpoints.py rot OUT D LAYERS SEED [--scale S] [--objective O] [--str-keys]
                                           an OSCAR rotation checkpoint
  make_checkpoints.py dump PT OUT          rotations then eigenvalues of every
                                           layer (sorted), raw float32
  make_checkpoints.py schema PT OUT        the structure of a rotation checkpoint
                                           as JSON (key order, types, dtypes,
                                           shapes, strides; no values)
  make_checkpoints.py batch FILE           the commands above, one per line
"""
import collections
import json
import os
import sys

import torch


def save_expected(outdir, name, t):
    t.detach().to(torch.float32).contiguous().numpy().tofile(os.path.join(outdir, name + ".bin"))
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "contiguous": bool(t.is_contiguous()), "offset": int(t.storage_offset())}


def gen(outdir):
    g = torch.Generator().manual_seed(1)
    base = torch.randn(6, 5, generator=g)
    shared = torch.randn(20, generator=g)
    tensors = {
        "f32": torch.randn(3, 4, generator=g),
        "f16": torch.randn(2, 3, generator=g).half(),
        "bf16": torch.randn(4, 2, generator=g).bfloat16(),
        "f64": torch.randn(3, generator=g).double(),
        "transposed": base.t(),                 # non-contiguous
        "offset": shared[5:15],                 # storage offset, shares storage
        "strided": base[1:, ::2],               # offset and strides
        "shared_whole": shared,
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "half_view": torch.randn(4, 6, generator=g).half()[:, 1:5].t(),
    }
    obj = {
        "i": 7, "neg": -5, "big": 2 ** 40, "bigneg": -(2 ** 40), "f": 1.5, "s": "h\u00e9llo",
        "t": True, "fa": False, "n": None, "lst": [1, "a", 2.5], "tup": (1, 2, 3),
        "od": collections.OrderedDict([("b", 1), ("a", 2)]), 3: "int key",
        "nested": {"deeper": [{"x": (1, [2, 3])}]},
        "tensors": tensors,
        "ints": torch.arange(5),
    }
    torch.save(obj, os.path.join(outdir, "mixed.pt"))
    meta = {k: save_expected(outdir, k, t) for k, t in tensors.items()}
    with open(os.path.join(outdir, "mixed.json"), "w") as f:
        json.dump(meta, f)
    # A module's state dict: an OrderedDict with a _metadata attribute (BUILD).
    lin = torch.nn.Linear(4, 3)
    torch.save(lin.state_dict(), os.path.join(outdir, "state_dict.pt"))
    save_expected(outdir, "sd_weight", lin.weight)
    # A bare Parameter (_rebuild_parameter).
    torch.save({"p": torch.nn.Parameter(torch.ones(2, 2))}, os.path.join(outdir, "param.pt"))
    torch.save({"a": 1}, os.path.join(outdir, "legacy.pt"), _use_new_zipfile_serialization=False)


def random_orthogonal(d, g):
    q, r = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).to(torch.float32)


def rot(out, d, layers, seed, scale=1.0, objective="qqt_r_h_pbr", str_keys=False):
    g = torch.Generator().manual_seed(seed)
    entries = {}
    for i in range(layers):
        m = random_orthogonal(d, g) * scale
        ev = torch.sort(torch.rand(d, generator=g)).values
        entries[str(i) if str_keys else i] = {"layer_id": i, "rotation": m, "eigenvalues": ev}
    torch.save({"format_version": 1, "objective": objective, "source_grouping": "layer",
                "layers": entries}, out)


def dump(pt, out):
    ck = torch.load(pt, map_location="cpu")
    ids = sorted(ck["layers"].keys(), key=int)
    with open(out, "wb") as f:
        for i in ids:
            ck["layers"][i]["rotation"].float().contiguous().numpy().tofile(f)
        for i in ids:
            ck["layers"][i]["eigenvalues"].float().contiguous().numpy().tofile(f)


def describe(x):
    if isinstance(x, torch.Tensor):
        return {"tensor": str(x.dtype).replace("torch.", ""), "shape": list(x.shape), "stride": list(x.stride()),
                "offset": int(x.storage_offset())}
    if isinstance(x, dict):
        return {"dict": type(x).__name__, "keys": [[type(k).__name__, k] for k in x.keys()],
                "values": [describe(v) for v in x.values()]}
    return {"type": type(x).__name__}


def schema(pt, out):
    ck = torch.load(pt, map_location="cpu")
    with open(out, "w") as f:
        json.dump(describe(ck), f)


def main(argv):
    cmd = argv[0]
    if cmd == "batch":  # one command per line; saves a torch import per file
        import shlex
        with open(argv[1]) as f:
            for line in f:
                if line.strip():
                    main(shlex.split(line))
    elif cmd == "gen":
        gen(argv[1])
    elif cmd == "rot":
        args = argv[1:]
        kw = {}
        if "--scale" in args:
            kw["scale"] = float(args[args.index("--scale") + 1])
        if "--objective" in args:
            kw["objective"] = args[args.index("--objective") + 1]
        if "--str-keys" in args:
            kw["str_keys"] = True
        rot(args[0], int(args[1]), int(args[2]), int(args[3]), **kw)
    elif cmd == "dump":
        dump(argv[1], argv[2])
    elif cmd == "schema":
        schema(argv[1], argv[2])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
