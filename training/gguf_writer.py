"""A minimal GGUF (version 3) writer: typed metadata and F32/F16 tensors.

Layout: magic "GGUF", version u32, tensor count u64, metadata count u64,
the metadata (key, u32 value type, value), the tensor infos (name, u32 rank,
u64 dims innermost first, u32 type, u64 offset into the data section), zero
padding to the alignment, then the tensor data, each tensor aligned.
"""
import struct

import numpy as np

ALIGN = 32
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
GGML_F32, GGML_F16 = 0, 1


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _scalar(vtype, v):
    fmt = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
           T_F32: "<f", T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}[vtype]
    return struct.pack(fmt, v)


class GgufWriter:
    def __init__(self):
        self.kv = []       # (key, encoded bytes)
        self.tensors = []  # (name, np array already in its stored dtype, ggml type)

    def add(self, key, vtype, value):
        self.kv.append((key, struct.pack("<I", vtype) + self._value(vtype, value)))

    def add_array(self, key, etype, values):
        body = struct.pack("<IQ", etype, len(values)) + b"".join(self._value(etype, v) for v in values)
        self.kv.append((key, struct.pack("<I", T_ARR) + body))

    @staticmethod
    def _value(vtype, v):
        return _str(v) if vtype == T_STR else _scalar(vtype, v)

    def add_tensor(self, name, array, ggml_type):
        a = np.ascontiguousarray(array, dtype=np.float16 if ggml_type == GGML_F16 else np.float32)
        self.tensors.append((name, a, ggml_type))

    def write(self, path):
        keys = [k for k, _ in self.kv]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate metadata key")
        out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv)))
        for k, v in self.kv:
            out += _str(k) + v
        offset = 0
        offsets = []
        for name, a, t in self.tensors:
            offsets.append(offset)
            out += _str(name) + struct.pack("<I", a.ndim)
            out += struct.pack("<%dQ" % a.ndim, *reversed(a.shape))  # innermost first
            out += struct.pack("<IQ", t, offset)
            offset += (a.nbytes + ALIGN - 1) // ALIGN * ALIGN
        out += b"\0" * (-len(out) % ALIGN)
        with open(path, "wb") as f:
            f.write(out)
            for (name, a, t), off in zip(self.tensors, offsets):
                b = a.tobytes()
                f.write(b + b"\0" * (-len(b) % ALIGN))
