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


def _is_compiled():
    return os.environ.get("STUB_TORCH_CUDA", "1") == "1"


init_env = {}  # CUDA_VISIBLE_DEVICES and CUDA_MPS_PIPE_DIRECTORY as the driver read them when it started (cuInit)
_current = 0  # the real current device index
default_generators = ()


def _driver_start():
    """The driver reads the environment once, at the first call that reaches it (cuInit): torch's device_count() and
    is_available() are such calls, without starting torch's CUDA."""
    if _is_compiled() and not init_env:
        for name in ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY"):
            init_env[name] = os.environ.get(name)


def _real_count():
    """The devices the driver enumerates: a process sees ONE MIG device whatever CUDA_VISIBLE_DEVICES lists."""
    visible = init_env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return int(os.environ.get("STUB_TORCH_DEVICES", "1"))
    items = [v.strip() for v in visible.split(",") if v.strip()]
    return 1 if any(v.startswith("MIG-") for v in items) else len(items)


def is_available():
    _driver_start()
    return _is_compiled() and _real_count() > 0


def device_count():
    # like real torch it asks the driver; like it on some setups, says 0 until initialised
    _driver_start()
    return _real_count() if (_initialized and _is_compiled()) else 0


def _check_ordinal(index):
    """What the C++ side does with a device index: start CUDA, refuse one the driver does not enumerate."""
    import torch
    torch.cuda._lazy_init()  # through the module attribute, as C++'s lazy init does
    if not 0 <= index < _real_count():
        raise RuntimeError("CUDA error: invalid device ordinal (stub: %d of %d)" % (index, _real_count()))


def _cuda_setDevice(index):
    global _current
    _check_ordinal(index)
    _current = index


def set_device(device):
    device = _get_device_index(device)
    if device >= 0:
        if not _is_compiled():
            raise AssertionError("Torch not compiled with CUDA enabled")
        calls.append(("set_device", device))
        _cuda_setDevice(device)


def _exchange_device(index):
    global _current
    _check_ordinal(index)
    calls.append(("exchange_device", index))
    previous, _current = _current, index
    return previous


class device(object):
    """torch.cuda.device: makes `device` current. As torch 2.x: through torch.cuda._exchange_device (C); with
    STUB_TORCH_DEVICE_CONTEXT=1.13 as torch 1.13: reads current_device() and calls set_device() with the index."""

    def __init__(self, device):
        self.idx = _get_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        import torch
        if os.environ.get("STUB_TORCH_DEVICE_CONTEXT") == "1.13":
            self.prev_idx = torch.cuda.current_device()
            if self.prev_idx != self.idx:
                torch.cuda.set_device(self.idx)
            return self
        self.prev_idx = torch.cuda._exchange_device(self.idx)
        return self

    def __exit__(self, *exc):
        import torch
        if os.environ.get("STUB_TORCH_DEVICE_CONTEXT") == "1.13":
            if self.prev_idx != self.idx:
                torch.cuda.set_device(self.prev_idx)
            return False
        torch.cuda._exchange_device(self.prev_idx)
        return False


def is_initialized():
    return _initialized


class _Generator(object):
    def __init__(self, index):
        self.index = index
        self.seed = None

    def manual_seed(self, seed):
        self.seed = seed


def _lazy_init():
    global _initialized, default_generators
    if _initialized:
        return
    if not _is_compiled():
        raise AssertionError("Torch not compiled with CUDA enabled")
    _driver_start()
    _initialized = True
    default_generators = tuple(_Generator(i) for i in range(_real_count()))
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


def manual_seed(seed):
    # as torch.cuda.random: the current device's generator, by index
    def cb():
        default_generators[current_device()].manual_seed(seed)
    _lazy_call(cb) if "_lazy_call" in globals() else (_lazy_init(), cb())


def manual_seed_all(seed):
    def cb():
        for i in range(device_count()):
            default_generators[i].manual_seed(seed)
    _lazy_call(cb) if "_lazy_call" in globals() else (_lazy_init(), cb())


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
    _check_ordinal(_get_device_index(device, optional=True))
    return _CudaDeviceProperties()


def get_device_name(device=None):
    return get_device_properties(device).name


def mem_get_info(device=None):
    _lazy_init()
    if device is None:
        device = current_device()
    _check_ordinal(_get_device_index(device))
    return _raw_mem_get_info(device)


def _raw_mem_get_info(device=None):
    return (_phys() - 1024 * MIB - _reserved, _phys())


def memory_reserved(device=None):
    _check_ordinal(_get_device_index(device, optional=True))
    return _reserved


def max_memory_reserved(device=None):
    return _peak_reserved


def max_memory_allocated(device=None):
    return _peak_allocated


def set_per_process_memory_fraction(fraction, device=None):
    _lazy_init()
    if device is None:
        device = current_device()
    device = _get_device_index(device)
    _check_ordinal(device)
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
from ._utils import _get_device_index  # noqa: E402  (bound by name, as real torch binds it)


def _free(nbytes):
    global _reserved
    _reserved = max(0, _reserved - nbytes)
