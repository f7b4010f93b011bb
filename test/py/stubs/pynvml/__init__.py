"""Stand-in pynvml (nvidia-ml-py style), for the gpu-cosplay hook tests."""
import ctypes
import os

nvmlMemory_v2 = 0x02000028
_inited = False


class NVMLError(Exception):
    pass


class c_nvmlMemory_t(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class c_nvmlMemory_v2_t(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


MIB = 1024 * 1024
PHYS = 143771 * MIB


def nvmlInit():
    global _inited
    _inited = True


def nvmlShutdown():
    pass


def _check():
    if not _inited:
        raise NVMLError("Uninitialized")


def nvmlDeviceGetHandleByIndex(i):
    _check()
    return ("handle", i)


def nvmlDeviceGetCount():
    _check()
    return int(os.environ.get("STUB_PYNVML_COUNT", "1"))


def nvmlDeviceGetHandleByUUID(uuid):
    """STUB_PYNVML_UUIDS (a comma list) are the uuids this NVML knows; bytes only with STUB_PYNVML_BYTES=1."""
    _check()
    if os.environ.get("STUB_PYNVML_BYTES") == "1" and not isinstance(uuid, bytes):
        raise TypeError("bytes or integer address expected instead of str instance")
    uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
    if uuid not in os.environ.get("STUB_PYNVML_UUIDS", "").split(","):
        raise NVMLError("Not Found")
    return ("uuid", uuid)


def nvmlDeviceGetName(handle):
    _check()
    name = "NVIDIA H200"
    return name.encode() if os.environ.get("STUB_PYNVML_BYTES") == "1" else name


def nvmlDeviceGetMemoryInfo(handle, version=None):
    _check()
    if version == nvmlMemory_v2:
        m = c_nvmlMemory_v2_t()
        m.version = version
        m.total = PHYS
        m.reserved = 700 * MIB
        m.used = 30000 * MIB
        m.free = PHYS - m.reserved - m.used
        return m
    m = c_nvmlMemory_t()
    m.total = PHYS
    m.used = 30700 * MIB
    m.free = PHYS - m.used
    return m


def nvmlDeviceGetPowerManagementLimit(handle):
    return 700000


def nvmlDeviceGetPowerManagementDefaultLimit(handle):
    return 700000


def nvmlDeviceGetEnforcedPowerLimit(handle):
    return 700000


def nvmlDeviceGetPowerManagementLimitConstraints(handle):
    return [200000, 700000]


class _Process(object):
    def __init__(self, pid, mib):
        self.pid = pid
        self.usedGpuMemory = mib * MIB


def _procs(var):
    import json
    return [_Process(pid, mib) for pid, mib in json.loads(os.environ.get(var, "[]"))]


def nvmlDeviceGetComputeRunningProcesses(handle):
    """STUB_PYNVML_PROCS: JSON [[pid, MiB], ...]"""
    _check()
    return _procs("STUB_PYNVML_PROCS")


nvmlDeviceGetComputeRunningProcesses_v3 = nvmlDeviceGetComputeRunningProcesses


def nvmlDeviceGetMPSComputeRunningProcesses(handle):
    """STUB_PYNVML_MPS_PROCS: JSON [[pid, MiB], ...]"""
    _check()
    return _procs("STUB_PYNVML_MPS_PROCS")
