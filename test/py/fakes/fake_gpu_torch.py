"""A torch that plays a GPU for gpu_cosplay_perf.py, passed in as a module (no import hooks): a virtual clock that
GEMMs and copies advance at a chosen rate (CUDA events read it), an allocator with a chosen limit and refusal text,
a CUDA init that can fail, and a fake libcuda driver (cuMemAlloc_v2 and friends) with a hard limit or none."""


class OutOfMemoryError(RuntimeError):
    pass


class FakeGpu(object):
    def __init__(self, fp32_tflops=50.0, bf16_tflops=600.0, bandwidth_gbs=3000.0, total_bytes=24 << 30,
                 alloc_limit_bytes=None, oom_text="CUDA out of memory. Tried to allocate", cuda_ok=True,
                 init_error=None, cuda_build="12.4", warm_calls=0, fail_at=None, phys_bytes=141 << 30):
        self.rates = {"float32": fp32_tflops * 1e12, "bfloat16": bf16_tflops * 1e12}
        self.bandwidth = bandwidth_gbs * 1e9
        self.total = total_bytes
        self.limit = total_bytes if alloc_limit_bytes is None else alloc_limit_bytes
        self.oom_text = oom_text
        self.cuda_ok = cuda_ok
        self.init_error = init_error
        self.cuda_build = cuda_build
        self.warm_calls = warm_calls  # the first calls run slower (clock ramping up)
        self.fail_at = fail_at or {}
        self.phys = phys_bytes
        self.now = 0.0
        self.calls = 0
        self.reserved = 0
        self.max_gemm_call_s = 0.0


def make_torch(gpu):
    """A module-like object with the slice of the torch API gpu_cosplay_perf uses."""

    class Tensor(object):
        def __init__(self, shape, dtype, device):
            self.shape = shape
            self.dtype = dtype
            self.device = device
            self.nbytes = 1
            for d in shape:
                self.nbytes *= d
            self.nbytes *= {"float32": 4, "bfloat16": 2, "uint8": 1}[dtype]

        def to(self, dtype):
            return Tensor(self.shape, dtype, self.device)

        def fill_(self, v):
            return self

        def copy_(self, src):
            gpu.now += 2.0 * self.nbytes / gpu.bandwidth * slow()
            return self

    def slow():
        gpu.calls += 1
        return 2.0 if gpu.calls <= gpu.warm_calls else 1.0

    def fail(step):
        if step in gpu.fail_at:
            raise gpu.fail_at[step]

    def alloc(shape, dtype, device):
        t = Tensor(shape, dtype, device)
        if str(device).startswith("cuda"):
            if gpu.reserved + t.nbytes > gpu.limit:
                raise OutOfMemoryError(gpu.oom_text)
        return t

    class Event(object):
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = gpu.now

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return (other.t - self.t) * 1000.0

    class Props(object):
        multi_processor_count = 2
        total_memory = gpu.total
        name = "NVIDIA GeForce RTX 3090"

    class Cuda(object):
        OutOfMemoryError = OutOfMemoryError

        @staticmethod
        def is_available():
            return gpu.cuda_ok

        @staticmethod
        def init():
            if gpu.init_error:
                raise RuntimeError(gpu.init_error)

        @staticmethod
        def mem_get_info(i=0):
            fail("mem_get_info")
            return gpu.total - gpu.reserved, gpu.total

        @staticmethod
        def get_device_name(i=0):
            fail("get_device_name")
            return "NVIDIA GeForce RTX 3090"

        @staticmethod
        def get_device_properties(i=0):
            return Props()

        @staticmethod
        def synchronize():
            pass

        @staticmethod
        def empty_cache():
            pass

        @staticmethod
        def memory_reserved(i=0):
            return gpu.reserved

    Cuda.Event = Event

    class Flags(object):
        allow_tf32 = True
        allow_bf16_reduced_precision_reduction = True
        allow_fp16_reduced_precision_reduction = True

    class Backends(object):
        class cuda(object):
            matmul = Flags()
        cudnn = Flags()

    class Version(object):
        cuda = gpu.cuda_build

    class Torch(object):
        __version__ = "2.4.0+fake"
        float32 = "float32"
        bfloat16 = "bfloat16"
        uint8 = "uint8"
        cuda = Cuda
        backends = Backends
        version = Version
        _precision = ["high"]

        @staticmethod
        def randn(*shape, device=None, dtype=None):
            return alloc(shape, dtype, device)

        @staticmethod
        def empty(*shape, device=None, dtype=None):
            return alloc(shape, dtype, device)

        @staticmethod
        def empty_like(t):
            return alloc(t.shape, t.dtype, t.device)

        @staticmethod
        def matmul(a, b, out=None):
            fail("matmul")
            n = a.shape[0]
            dt = n ** 3 * 2.0 / gpu.rates[a.dtype] * slow()
            gpu.max_gemm_call_s = max(gpu.max_gemm_call_s, dt)
            gpu.now += dt
            return out

        @staticmethod
        def get_float32_matmul_precision():
            return Torch._precision[0]

        @staticmethod
        def set_float32_matmul_precision(p):
            Torch._precision[0] = p

    Torch.OutOfMemoryError = OutOfMemoryError
    return Torch


class FakeDriver(object):
    """libcuda as gpu_cosplay_perf.CudaDriver wraps it: a hard limit (MPS pinned, MIG slice) or none."""

    def __init__(self, gpu, hard_limit_bytes=None, other_error=None, free_bytes=None):
        self.gpu = gpu
        self.hard = hard_limit_bytes
        self.other_error = other_error
        self.free_bytes = free_bytes
        self.asked = []

    def mem_get_info(self):
        free = self.free_bytes if self.free_bytes is not None else self.gpu.phys - self.gpu.reserved
        return 0, free, self.gpu.phys

    def alloc(self, n):
        self.asked.append(n)
        if self.other_error is not None:
            return self.other_error, 0
        free = self.mem_get_info()[1]
        context = 512 << 20
        if n > free or (self.hard is not None and self.gpu.reserved + context + n > self.hard):
            return 2, 0
        return 0, 0xdead

    def free(self, ptr):
        return 0

    def error_name(self, rc):
        return {2: "CUDA_ERROR_OUT_OF_MEMORY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS"}.get(rc, "CUresult %d" % rc)
