"""Stand-in torch for the gpu-cosplay hook tests (not the real thing)."""
import os

__version__ = os.environ.get("STUB_TORCH_VERSION", "2.4.0")


class device(object):
    def __init__(self, spec, index=None):
        if isinstance(spec, int):  # torch.device(1) is cuda:1
            spec = "cuda:%d" % spec
        spec = str(spec)
        self.type, _, idx = spec.partition(":")
        self.index = int(idx) if idx else index

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return "device(type='%s'%s)" % (self.type, "" if self.index is None else ", index=%d" % self.index)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)


class OutOfMemoryError(RuntimeError):
    pass


import types as _types  # noqa: E402

_C = _types.ModuleType("torch._C")
if os.environ.get("STUB_TORCH_NCCL"):  # e.g. 2.30.1: torch._C._nccl_version() packs it as torch 1.13 and 2.x do
    _maj, _min, _pat = (int(x) for x in os.environ["STUB_TORCH_NCCL"].split("."))
    _C._nccl_version = lambda: (_maj << 32) | (_min << 16) | _pat

from . import cuda, backends  # noqa: E402

if os.environ.get("STUB_TORCH_ACCELERATOR", "1") == "1":
    from . import accelerator  # noqa: E402,F401

uint8 = "uint8"


class _Tensor(object):
    def __init__(self, n):
        self.n = n
        cuda.allocate(n)

    def __del__(self):
        try:
            cuda._free(self.n)
        except Exception:
            pass


def _c_device(spec):
    """What C++ does with a device argument: parse it; for CUDA, start CUDA and refuse an ordinal the driver lacks."""
    if spec is None:
        return device("cpu")
    d = spec if isinstance(spec, device) else device(spec)
    if d.type == "cuda":
        index = cuda._current if d.index is None else d.index
        cuda._check_ordinal(index)
        d = device("cuda:%d" % index)
    return d


class Tensor(object):
    """A tensor with a device and no data, for the ordinal mapping tests."""

    def __init__(self, dev):
        self.device = dev

    def to(self, *args, **kwargs):
        spec = kwargs.get("device", args[0] if args else None)
        if isinstance(spec, Tensor):
            return Tensor(spec.device)
        if spec is None or spec in ("float32", uint8):
            return self
        return Tensor(_c_device(spec))

    def cuda(self, device=None, non_blocking=False):
        return Tensor(_c_device("cuda" if device is None else device))

    def get_device(self):
        return self.device.index if self.device.type == "cuda" else -1


def zeros(*size, **kwargs):
    return Tensor(_c_device(kwargs.get("device")))


def ones(*size, **kwargs):
    return Tensor(_c_device(kwargs.get("device")))


def empty(n, dtype=None, device=None):
    if device is not None and str(device).startswith("cuda"):
        _c_device(device)
        return _Tensor(n)
    return Tensor(_c_device(device))
