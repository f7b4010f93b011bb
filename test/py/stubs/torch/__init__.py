"""Stand-in torch for the gpu-cosplay hook tests (not the real thing)."""
import os

__version__ = os.environ.get("STUB_TORCH_VERSION", "2.4.0")


class device(object):
    def __init__(self, spec):
        spec = str(spec)
        self.type, _, idx = spec.partition(":")
        self.index = int(idx) if idx else None


class OutOfMemoryError(RuntimeError):
    pass


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


def empty(n, dtype=None, device=None):
    if device and str(device).startswith("cuda"):
        return _Tensor(n)
    return object()
