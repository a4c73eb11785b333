#!/usr/bin/env python3
"""Writes the torchio_fuzz seed corpus (fuzz/corpus/torchio) without torch:
pickles with the GLOBALs and persistent ids torch.save writes (through
stand-in torch modules), and one whole checkpoint zip. Pickles refer to
storages "0" (16 float32) and "1" (8 float16), the ones torchio_fuzz puts
next to a bare data.pkl."""
import collections, io, os, pickle, struct, sys, types, zipfile

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'torchio')
os.makedirs(out, exist_ok=True)

torch = types.ModuleType('torch')
utils = types.ModuleType('torch._utils')
def _rebuild_tensor_v2(*a): pass
_rebuild_tensor_v2.__module__ = 'torch._utils'
utils._rebuild_tensor_v2 = _rebuild_tensor_v2
class FloatStorage: pass
class HalfStorage: pass
FloatStorage.__module__ = HalfStorage.__module__ = 'torch'
torch.FloatStorage, torch.HalfStorage, torch._utils = FloatStorage, HalfStorage, utils
sys.modules['torch'], sys.modules['torch._utils'] = torch, utils

class Store:
    def __init__(self, cls, key, n): self.cls, self.key, self.n = cls, key, n
class Tensor:
    def __init__(self, store, off, shape, stride): self.args = (store, off, shape, stride)
    def __reduce__(self): return (_rebuild_tensor_v2, self.args + (False, collections.OrderedDict()))
class TorchPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ('storage', obj.cls, obj.key, 'cpu', obj.n) if isinstance(obj, Store) else None
def dumps(obj):
    b = io.BytesIO()
    TorchPickler(b, protocol=2).dump(obj)
    return b.getvalue()

f32, f16 = Store(FloatStorage, '0', 16), Store(HalfStorage, '1', 8)
seeds = {
    'rotation.pkl': dumps({'layers': [{'rotation': Tensor(f32, 0, (4, 4), (4, 1)), 'index': 0}], 'dim': 4}),
    'half_view.pkl': dumps(collections.OrderedDict([('w', Tensor(f16, 2, (2, 3), (1, 2))),
                                                    ('b', Tensor(f32, 3, (5,), (2,)))])),
    'plain.pkl': pickle.dumps({'a': [1, 2.5, None, True, 'x', b'y', (1, (2,))], 'n': -7, 'big': 2**40}, protocol=2),
    'proto4.pkl': pickle.dumps({'k': list(range(5)), 's': 'text'}, protocol=4),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f: f.write(data)
buf = io.BytesIO()
with zipfile.ZipFile(buf, 'w', zipfile.ZIP_STORED) as z:
    z.writestr('archive/data.pkl', seeds['rotation.pkl'])
    z.writestr('archive/data/0', struct.pack('<16f', *[float(i) for i in range(16)]))
    z.writestr('archive/version', '3\n')
with open(os.path.join(out, 'rotation.pt'), 'wb') as f: f.write(buf.getvalue())
