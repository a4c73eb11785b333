"""A small, independent GGUF reader for the reference models (F32/F16 only).

Written from the GGUF specification, sharing no code with the engine, so the
NumPy reference and the engine can only agree if both read the file right.
"""
import struct

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}


class Gguf:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.off = 0
        magic, version = struct.unpack_from("<II", self.buf, 0)
        assert magic == 0x46554747, "not a GGUF file"
        assert version in (2, 3)
        self.off = 8
        n_tensors, n_kv = struct.unpack_from("<QQ", self.buf, self.off)
        self.off += 16
        self.meta = {}
        for _ in range(n_kv):
            key = self._str()
            vtype = self._u32()
            self.meta[key] = self._value(vtype)
        infos = []
        for _ in range(n_tensors):
            name = self._str()
            n_dims = self._u32()
            dims = struct.unpack_from("<%dQ" % n_dims, self.buf, self.off)
            self.off += 8 * n_dims
            ttype = self._u32()
            (offset,) = struct.unpack_from("<Q", self.buf, self.off)
            self.off += 8
            infos.append((name, dims, ttype, offset))
        align = int(self.meta.get("general.alignment", 32))
        data_start = (self.off + align - 1) // align * align
        self.tensors = {}
        for name, dims, ttype, offset in infos:
            count = int(np.prod(dims))
            if ttype == 0:
                arr = np.frombuffer(self.buf, np.float32, count, data_start + offset)
            elif ttype == 1:
                arr = np.frombuffer(self.buf, np.float16, count, data_start + offset).astype(np.float32)
            else:
                continue  # the reference only needs float models
            # GGUF dims are innermost first; NumPy shapes outermost first.
            self.tensors[name] = arr.reshape(tuple(reversed(dims))).astype(np.float64)

    def _u32(self):
        (v,) = struct.unpack_from("<I", self.buf, self.off)
        self.off += 4
        return v

    def _str(self):
        (n,) = struct.unpack_from("<Q", self.buf, self.off)
        self.off += 8
        s = self.buf[self.off:self.off + n].decode("utf-8")
        self.off += n
        return s

    def _value(self, vtype):
        if vtype in _SCALARS:
            fmt = _SCALARS[vtype]
            (v,) = struct.unpack_from(fmt, self.buf, self.off)
            self.off += struct.calcsize(fmt)
            return v
        if vtype == 8:
            return self._str()
        if vtype == 9:
            etype = self._u32()
            (n,) = struct.unpack_from("<Q", self.buf, self.off)
            self.off += 8
            return [self._value(etype) for _ in range(n)]
        raise ValueError("unknown GGUF value type %d" % vtype)
