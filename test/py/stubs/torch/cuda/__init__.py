"""Stand-in torch.cuda: lazy init, a caching-allocator model with a per-process fraction."""
import os

MIB = 1024 * 1024
_initialized = False
_queued_calls = []
calls = []  # what the hook did, for assertions
_fraction = {}
_reserved = 0
_peak_reserved = 0
_peak_allocated = 0


def _phys():
    return int(os.environ.get("STUB_TORCH_PHYS_MIB", "40448")) * MIB


def is_available():
    return os.environ.get("STUB_TORCH_CUDA", "1") == "1"


def device_count():
    # like real torch on some setups: 0 until initialised; one device seen (a process enumerates one MIG device)
    return 1 if (_initialized and is_available()) else 0


def _check(device):
    index = device if isinstance(device, int) else getattr(__import__("torch").device(device), "index", None) if device is not None else None
    if index is not None and index >= max(1, device_count()):
        raise RuntimeError("CUDA error: invalid device ordinal")


def set_device(device):
    global _current
    _lazy_init()
    _check(device)
    calls.append(("set_device", device))
    _current = device if isinstance(device, int) else 0


def _exchange_device(index):
    global _current
    _lazy_init()
    _check(index)
    calls.append(("exchange_device", index))
    previous, _current = _current, index
    return previous


class device(object):
    """torch.cuda.device: a context manager that makes `device` current."""

    def __init__(self, device):
        self.idx = device if isinstance(device, int) else __import__("torch").device(device).index

    def __enter__(self):
        # as real torch: torch.cuda._exchange_device (C), not the Python set_device
        _exchange_device(self.idx)
        return self

    def __exit__(self, *exc):
        return False


def is_initialized():
    return _initialized


init_env = {}  # CUDA_VISIBLE_DEVICES and CUDA_MPS_PIPE_DIRECTORY as CUDA read them when it started
_current = 0


def _lazy_init():
    global _initialized
    if _initialized:
        return
    if not is_available():
        raise AssertionError("Torch not compiled with CUDA enabled")
    _initialized = True
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY"):
        init_env[name] = os.environ.get(name)
    for fn, _tb in list(_queued_calls):
        fn()
    del _queued_calls[:]


if os.environ.get("STUB_TORCH_NO_LAZY_CALL") != "1":
    def _lazy_call(callable, **kwargs):
        if is_initialized():
            callable()
        else:
            _queued_calls.append((callable, None))


def current_device():
    _lazy_init()
    return _current


class _CudaDeviceProperties(object):
    def __init__(self):
        self.name = "NVIDIA H200 MIG 3g.71gb"
        self.total_memory = _phys()
        self.major = 9
        self.minor = 0
        self.multi_processor_count = 60

    def __repr__(self):
        return "_CudaDeviceProperties(name='%s', major=9, minor=0, total_memory=%dMB, multi_processor_count=60)" % (
            self.name, self.total_memory // MIB)


def get_device_properties(device=None):
    _lazy_init()
    _check(device)
    return _CudaDeviceProperties()


def get_device_name(device=None):
    return get_device_properties(device).name


def mem_get_info(device=None):
    _lazy_init()
    return _raw_mem_get_info(device)


def _raw_mem_get_info(device=None):
    return (_phys() - 1024 * MIB - _reserved, _phys())


def memory_reserved(device=None):
    return _reserved


def max_memory_reserved(device=None):
    return _peak_reserved


def max_memory_allocated(device=None):
    return _peak_allocated


def set_per_process_memory_fraction(fraction, device=None):
    _lazy_init()
    calls.append(("set_per_process_memory_fraction", fraction, device))
    _fraction[device if device is not None else 0] = fraction


def is_bf16_supported(including_emulation=True):
    return True


def empty_cache():
    pass


def allocate(nbytes):
    """Model of the caching allocator: raises OutOfMemoryError past fraction * physical."""
    global _reserved, _peak_reserved, _peak_allocated
    _lazy_init()
    import torch
    limit = _fraction.get(0, 1.0) * _phys()
    if _reserved + nbytes > limit:
        raise torch.OutOfMemoryError("CUDA out of memory (stub)")
    _reserved += nbytes
    _peak_reserved = max(_peak_reserved, _reserved)
    _peak_allocated = max(_peak_allocated, _reserved)


from . import memory  # noqa: E402,F401


def _free(nbytes):
    global _reserved
    _reserved = max(0, _reserved - nbytes)
