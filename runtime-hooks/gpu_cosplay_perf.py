#!/usr/bin/env python3
"""gpu-cosplay performance measurement: what this device really delivers.

Used in two places: `verify.py --perf` inside a session (through the costume, as the user's code sees it) and
`gpu-cosplay calibrate` on the host (the whole GPU, CUDA_VISIBLE_DEVICES=<its UUID>). It only measures; the
verdicts (PASS/WARN/FAIL against the plan) are computed by the host tool (src/plan/perf-verdict.ts), so the
bands live in one place.

Measures, with torch (CUDA events on CUDA, time.perf_counter on CPU; on CUDA warm-up by time until the rate
settles, then a window of ~1.5 s per axis, median per call; GEMM sizes shrink to what the share computes fast):
  fp32       FP32 GEMM TFLOPS, TF32 off (allow_tf32 False, matmul precision "highest")
  bf16       BF16 GEMM TFLOPS with FP32 accumulate (reduced-precision reductions off)
  bandwidth  device-to-device copy GB/s, counting bytes read + bytes written
  vram       the largest allocation the cap allows (bisection to 32 MiB, each refusal's text kept), one GiB more
             refused, and whether the cap is hard: the driver itself (cuMemAlloc_v2 via ctypes) asked for the
             limit - held + 64 MiB (CuPy's pool too when installed)
and samples SM clock, power and throttle reasons with `nvidia-smi --query-gpu` in a background thread. In a
session nvidia-smi is the costume shim, which would rewrite power limits to the target's; the sampler sets
GPU_COSPLAY_SHIM_PASSTHROUGH=1 so the shim execs the real binary and the samples are the real values.

Sizes adapt to the memory torch reports free (in a session: the cap) and are small on CPU, so a CPU run takes
a few seconds and a GPU run stays well under 30 s.

Prints one JSON object on stdout (see `measure`). On a fatal problem (NO_TORCH; NO_CUDA with the reason when CUDA
was asked for and cannot be used; DEVICE_OPEN naming the step; PERF_UNEXPECTED naming the step) prints
{"error": {"code", "message"}} and exits 3, never a traceback. Standard library plus torch (and cupy when importable).
"""

import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

MIB = 1 << 20
GIB = 1 << 30
SCHEMA = 1
# what measure() is doing now: an error names it
STEP = {"name": "start"}

# 8192^3 is the size the reference figures were taken at (H100 SXM ~800, H200 ~790 BF16 TFLOP/s).
GEMM_MAX_N = 8192
GEMM_MIN_N = 1024
COPY_MAX_BYTES = GIB
COPY_MIN_BYTES = 64 * MIB
# a timed sample runs the op enough times to last at least this long, so event resolution does not matter
MIN_SAMPLE_S = {"cuda": 0.02, "cpu": 0.05}
# the VRAM search stops when the bracket around the largest allocation that works is this narrow
VRAM_STEP_BYTES = 32 * MIB
# the hard-cap question asks the driver for (limit - held + this): past any limit, yet no slice's size refuses it
HARD_PROBE_EXTRA_BYTES = 64 * MIB
# steady state on CUDA: warm up until two consecutive batches agree within WARM_SETTLED (at least WARM_MIN_S, at
# most WARM_MAX_S), then time WINDOW_S per axis; one GEMM call lasts at most CALL_TARGET_S (sizes adapt to the rate)
WARM_MIN_S = {"cuda": 0.3, "cpu": 0.0}
WARM_MAX_S = {"cuda": 1.5, "cpu": 0.2}
WARM_SETTLED = 0.03
WINDOW_S = {"cuda": 1.5, "cpu": 0.25}
CALL_TARGET_S = 0.05
# MPS (CUDA_MPS_*), the allocator's settings and the costume's: what a measurement records about its environment
RECORDED_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "PYTORCH_CUDA_ALLOC_CONF",
                "GPU_COSPLAY_MPS_THREAD_PCT", "GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB", "GPU_COSPLAY_VRAM_MIB")
MPS_STATUS_FILE = "/run/gpu-cosplay/mps/status"
CUDA_ERROR_OUT_OF_MEMORY = 2

# NVML clocks event (throttle) reason bits, nvml.h nvmlClocksEventReason*
THROTTLE_BITS = [
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"),
]
# tried in order: newer drivers name the reasons field clocks_event_reasons, older ones clocks_throttle_reasons;
# the last set is what every driver (and the test simulator) answers
SAMPLE_FIELD_SETS = [
    ["clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "clocks_event_reasons.active", "temperature.gpu"],
    ["clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "clocks_throttle_reasons.active", "temperature.gpu"],
    ["clocks.gr", "clocks.max.gr", "power.draw", "power.limit"],
]
SAMPLE_KEYS = {
    "clocks.sm": "smClockMHz", "clocks.gr": "smClockMHz", "clocks.max.sm": "maxSmClockMHz",
    "clocks.max.gr": "maxSmClockMHz", "power.draw": "powerW", "power.limit": "powerLimitW",
    "clocks_event_reasons.active": "throttleReasons", "clocks_throttle_reasons.active": "throttleReasons",
    "temperature.gpu": "temperatureC",
}
SAMPLE_INTERVAL_S = 0.2
MAX_SAMPLE_ROWS = 300


class PerfError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


# ------------------------------------------------------------------------------------------------ sizes

def plan_sizes(kind, free_bytes):
    """GEMM sizes and the copy buffer for a device with `free_bytes` usable (ignored on CPU): the memory bound.
    On CUDA `fit_gemm_to_rate` then shrinks a GEMM whose single call would be too slow for this share."""
    if kind == "cpu":
        return {"gemmN": {"fp32": 384, "bf16": 384}, "copyBytes": 32 * MIB, "warmup": 1, "reps": 5}
    budget = max(0, int(free_bytes)) // 4

    def fit(elem_bytes):
        n = GEMM_MAX_N
        while n > GEMM_MIN_N and 3 * n * n * elem_bytes > budget:
            n //= 2
        return n

    copy = min(COPY_MAX_BYTES, max(COPY_MIN_BYTES, (max(0, int(free_bytes)) // 8) // MIB * MIB))
    return {"gemmN": {"fp32": fit(4), "bf16": fit(2)}, "copyBytes": copy, "warmup": 3, "reps": 10}


def fit_gemm_to_rate(n_max, flops_per_s):
    """The largest power-of-two size <= n_max whose one call lasts at most CALL_TARGET_S at the rate a quick probe
    saw: a 2-SM share does FP32 at ~1 TFLOPS, where one 8192^3 call alone takes over a second."""
    n = n_max
    while n > GEMM_MIN_N and 2.0 * n ** 3 / max(flops_per_s, 1.0) > CALL_TARGET_S:
        n //= 2
    return n


# ------------------------------------------------------------------------------------------------ timing

class Clock(object):
    """Times `n` calls of fn: CUDA events on CUDA (the host clock would time the launch), perf_counter on CPU."""

    def __init__(self, torch, kind):
        self.torch = torch
        self.kind = kind

    def sync(self):
        if self.kind == "cuda":
            self.torch.cuda.synchronize()

    def elapsed_s(self, fn, n):
        if self.kind == "cuda":
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return time.perf_counter() - t0


def time_op(clock, fn, warmup, reps):
    """Median seconds per call in the steady state. On CUDA: warm up by time, until two consecutive batches agree
    (the clock has settled), then `reps` samples filling WINDOW_S; each sample repeats fn `inner` times. On CPU:
    `warmup` calls, then samples of at least MIN_SAMPLE_S (the CPU run is a smoke test, kept short)."""
    kind = clock.kind
    for _ in range(max(1, warmup if kind == "cpu" else 1)):
        fn()
    clock.sync()
    once = max(clock.elapsed_s(fn, 1), 1e-7)
    warm_s, batches, settled = 0.0, 0, kind == "cpu"
    if kind == "cuda":
        batch = int(min(200, max(1, math.ceil(0.1 / once))))
        last = None
        while warm_s < WARM_MAX_S[kind]:
            t = clock.elapsed_s(fn, batch)
            warm_s += t
            batches += 1
            per = t / batch
            if last is not None and abs(per / last - 1) <= WARM_SETTLED and warm_s >= WARM_MIN_S[kind]:
                settled = True
                break
            last = per
        once = max(per, 1e-7)
    window = WINDOW_S[kind]
    per_sample = max(MIN_SAMPLE_S[kind], window / max(1, reps))
    inner = int(min(1000, max(1, math.ceil(per_sample / once))))
    if once * reps > 2 * window:  # one call already longer than the window: fewer samples keep the run short
        reps = max(3, int(window / once))
    samples = [clock.elapsed_s(fn, inner) / inner for _ in range(reps)]
    timed = sum(samples) * inner
    return statistics.median(samples), {"inner": inner, "reps": reps, "warmupS": round(warm_s, 3),
                                        "warmupBatches": batches, "settled": settled, "windowS": round(timed, 3),
                                        "deviceS": warm_s + timed + once}


# ------------------------------------------------------------------------------------------------ axes

def significant(x, digits=4):
    """CPU figures are tiny in TFLOPS; keep digits, not decimals."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, max(0, digits - 1 - int(math.floor(math.log10(abs(x))))))


def _axis_result(measured, unit, seconds, how, **extra):
    out = {"measured": significant(measured), "unit": unit, "medianS": seconds}
    out.update(extra)
    out.update(how)
    return out


def measure_gemm(torch, clock, device, dtype, n, warmup, reps):
    """GEMM TFLOPS at size n; on CUDA n first shrinks to what this share computes in CALL_TARGET_S per call."""
    probe = None
    if clock.kind == "cuda" and n > GEMM_MIN_N:
        m = GEMM_MIN_N
        a = torch.randn(m, m, device=device, dtype=torch.float32).to(dtype)
        b = torch.randn(m, m, device=device, dtype=torch.float32).to(dtype)
        out = torch.empty(m, m, device=device, dtype=dtype)
        torch.matmul(a, b, out=out)
        clock.sync()
        t = max(clock.elapsed_s(lambda: torch.matmul(a, b, out=out), 3) / 3, 1e-9)
        del a, b, out
        probe = {"n": m, "tflops": significant(2.0 * m ** 3 / t / 1e12)}
        n = fit_gemm_to_rate(n, 2.0 * m ** 3 / t)
    a = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    seconds, how = time_op(clock, lambda: torch.matmul(a, b, out=out), warmup, reps)
    del a, b, out
    return _axis_result(2.0 * n ** 3 / seconds / 1e12, "TFLOPS", seconds, how, n=n, sizeProbe=probe)


def measure_copy(torch, clock, device, nbytes, warmup, reps):
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src.fill_(7)
    dst = torch.empty_like(src)
    seconds, how = time_op(clock, lambda: dst.copy_(src), warmup, reps)
    del src, dst
    # a copy reads every byte once and writes it once
    return _axis_result(2.0 * nbytes / seconds / 1e9, "GB/s", seconds, how, bytes=nbytes)


class MatmulPolicy(object):
    """TF32 off and full-precision reductions for the duration of the measurement; restored after."""

    def __init__(self, torch):
        self.torch = torch
        self.saved = []

    def __enter__(self):
        t = self.torch
        for obj, attr in ((t.backends.cuda.matmul, "allow_tf32"), (t.backends.cudnn, "allow_tf32"),
                          (t.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
                          (t.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction")):
            try:
                if hasattr(obj, attr):
                    self.saved.append((obj, attr, getattr(obj, attr)))
                    setattr(obj, attr, False)
            except Exception:
                pass
        if hasattr(t, "get_float32_matmul_precision"):
            self.precision = t.get_float32_matmul_precision()
            t.set_float32_matmul_precision("highest")
        return self

    def effective(self):
        """The TF32/BF16 settings in force while measuring, read back (what the report was taken under)."""
        t = self.torch
        out = {}
        for key, obj, attr in (("cudaMatmulAllowTf32", t.backends.cuda.matmul, "allow_tf32"),
                               ("cudnnAllowTf32", t.backends.cudnn, "allow_tf32"),
                               ("bf16ReducedPrecisionReduction", t.backends.cuda.matmul,
                                "allow_bf16_reduced_precision_reduction")):
            try:
                out[key] = getattr(obj, attr) if hasattr(obj, attr) else None
            except Exception:
                out[key] = None
        out["float32MatmulPrecision"] = t.get_float32_matmul_precision() if hasattr(t, "get_float32_matmul_precision") else None
        return out

    def __exit__(self, *exc):
        # the precision setting drives allow_tf32 too: restore it first, then the flags as they were
        if getattr(self, "precision", None) is not None:
            self.torch.set_float32_matmul_precision(self.precision)
        for obj, attr, value in reversed(self.saved):
            try:
                setattr(obj, attr, value)
            except Exception:
                pass
        return False


def _is_oom(torch, exc):
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _refusal_text(exc):
    return ("%s: %s" % (type(exc).__name__, exc)).strip().split("\n")[0][:300]


def probe_vram(torch, cap_bytes, step=VRAM_STEP_BYTES):
    """The largest single allocation that succeeds, to within `step` (a bisection between what works and what is
    refused), and whether one GiB past the cap is refused. Each refusal's text is kept: torch's fraction check,
    cudaMalloc's out of memory and the MPS pinned limit read differently, and the difference matters."""
    torch.cuda.empty_cache()
    base = torch.cuda.memory_reserved(0)
    refusals = []
    attempts = [0]

    def works(n):
        attempts[0] += 1
        try:
            x = torch.empty(n, dtype=torch.uint8, device="cuda:0")
        except Exception as exc:
            if not _is_oom(torch, exc):
                raise
            if len(refusals) < 8:
                refusals.append({"bytes": n, "text": _refusal_text(exc)})
            torch.cuda.empty_cache()
            return False
        del x
        torch.cuda.empty_cache()
        return True

    hi = cap_bytes - base  # everything the cap leaves: refused when anything else counts against it
    lo = 0
    if hi > 0 and works(hi):
        lo = hi
    else:
        while hi - lo > step:
            mid = (lo + hi) // 2 // MIB * MIB
            if mid <= lo:
                break
            if works(mid):
                lo = mid
            else:
                hi = mid
    over = cap_bytes - base + GIB
    refused = not works(over)
    torch.cuda.empty_cache()
    usable = base + lo if lo > 0 else None
    return {"usableBytes": usable, "largestAllocBytes": lo, "heldBeforeBytes": base, "stepBytes": step,
            "underCapOk": usable is not None and cap_bytes - usable <= step, "overCapRefused": refused,
            "overCapBytes": over, "attempts": attempts[0], "refusals": refusals}


class CudaDriver(object):
    """cuMemAlloc_v2 / cuMemFree_v2 / cuMemGetInfo_v2 through ctypes in the calling thread's current context (torch
    made it current): below every library, so a refusal here is the driver's (a MIG slice, the MPS pinned limit)."""

    def __init__(self, lib):
        import ctypes
        self.ctypes = ctypes
        self.lib = lib

    @classmethod
    def load(cls):
        import ctypes
        last = None
        for name in ("libcuda.so.1", "libcuda.so"):
            try:
                return cls(ctypes.CDLL(name))
            except OSError as exc:
                last = exc
        raise OSError("libcuda not loadable: %s" % last)

    def mem_get_info(self):
        free, total = self.ctypes.c_size_t(), self.ctypes.c_size_t()
        rc = self.lib.cuMemGetInfo_v2(self.ctypes.byref(free), self.ctypes.byref(total))
        return rc, free.value, total.value

    def alloc(self, nbytes):
        ptr = self.ctypes.c_uint64()
        rc = self.lib.cuMemAlloc_v2(self.ctypes.byref(ptr), self.ctypes.c_size_t(nbytes))
        return rc, ptr.value

    def free(self, ptr):
        return self.lib.cuMemFree_v2(self.ctypes.c_uint64(ptr))

    def error_name(self, rc):
        s = self.ctypes.c_char_p()
        try:
            if self.lib.cuGetErrorName(int(rc), self.ctypes.byref(s)) == 0 and s.value:
                return s.value.decode()
        except Exception:
            pass
        return "CUresult %d" % rc


# tests replace this with a fake driver
DRIVER_FACTORY = CudaDriver.load


def probe_hard(torch, limit_bytes, driver_factory=None):
    """Is the cap hard? Asks the driver itself for (limit - what torch holds + 64 MiB): over the limit whatever
    else counts against it, yet small enough that a slice's own size does not refuse it. Only CUDA's out of
    memory counts as a refusal; when the request is more than the device has free, physical memory refused and
    the answer is unknown."""
    out = {"limitBytes": limit_bytes}
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        held = int(torch.cuda.memory_reserved(0))
        drv = (driver_factory or DRIVER_FACTORY)()
    except Exception as exc:
        out.update({"hard": None, "reason": "driver not reachable: %s" % _refusal_text(exc)})
        return out
    request = max(MIB, limit_bytes - held + HARD_PROBE_EXTRA_BYTES)
    out.update({"heldBytes": held, "requestBytes": request})
    rc, free, total = drv.mem_get_info()
    if rc == 0:
        out.update({"deviceFreeBytes": free, "deviceTotalBytes": total})
    rc, ptr = drv.alloc(request)
    if rc == 0:
        drv.free(ptr)
        out.update({"hard": False, "refusedBy": None, "reason": "the driver granted %d MiB past the limit" % (
            (request + held - limit_bytes) // MIB)})
        return out
    name = drv.error_name(rc)
    out["driverError"] = name
    if rc != CUDA_ERROR_OUT_OF_MEMORY:
        out.update({"hard": None, "refusedBy": None, "reason": "the driver failed with %s, not out of memory" % name})
        return out
    if "deviceFreeBytes" in out and request > out["deviceFreeBytes"]:
        out.update({"hard": None, "refusedBy": "physical",
                    "reason": "the device has only %d MiB free: physical memory refused, not a limit" % (
                        out["deviceFreeBytes"] // MIB)})
        return out
    out.update({"hard": True, "refusedBy": "limit", "reason": "the driver refused %s past the limit" % name})
    return out


def probe_cupy(cap_bytes):
    """CuPy keeps its own pool limit (CUPY_GPU_MEMORY_LIMIT): one GiB past the cap through the pool must be
    refused by it. A raw cudaMalloc of the same size bypasses every library: refused there, something below
    the libraries (a MIG slice, an MPS memory limit) enforces the cap, so it is hard."""
    try:
        import cupy
    except Exception as exc:
        return {"installed": False, "reason": "cupy not importable: %s" % type(exc).__name__}
    out = {"installed": True}
    pool = cupy.get_default_memory_pool()
    over = cap_bytes + GIB

    def refused(alloc, release):
        try:
            handle = alloc()
        except Exception as exc:  # cupy's OutOfMemoryError, or CUDARuntimeError cudaErrorMemoryAllocation
            if "memory" in ("%s %s" % (type(exc).__name__, exc)).lower():
                return True
            raise
        release(handle)
        del handle
        return False

    try:
        out["libraryLimitBytes"] = pool.get_limit()
        out["libraryRefused"] = refused(lambda: cupy.empty(over, dtype=cupy.uint8), lambda x: None)
        pool.free_all_blocks()
        rt = cupy.cuda.runtime
        out["rawRefused"] = refused(lambda: rt.malloc(over), rt.free)
        pool.free_all_blocks()
    except Exception as exc:
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
    return out


# ------------------------------------------------------------------------------------------------ samples

def parse_sample_line(fields, line):
    """One `--format=csv,noheader,nounits` line -> a row keyed like SAMPLE_KEYS (numbers, or None for N/A)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(fields):
        return None
    row = {}
    for f, p in zip(fields, parts):
        key = SAMPLE_KEYS[f]
        if key == "throttleReasons":
            try:
                row[key] = int(p, 16) if p.lower().startswith("0x") else int(p)
            except ValueError:
                row[key] = None
            continue
        try:
            row[key] = float(p)
        except ValueError:
            row[key] = None
    return row


def decode_reasons(mask):
    return [name for bit, name in THROTTLE_BITS if mask & bit]


class Sampler(object):
    """nvidia-smi --query-gpu every SAMPLE_INTERVAL_S in a thread; real values even behind the shim."""

    def __init__(self, smi_id=None, interval_s=SAMPLE_INTERVAL_S):
        self.smi = find_smi()
        self.smi_id = smi_id
        self.interval_s = interval_s
        self.rows = []
        self.fields = None
        self.reason = None
        self.t0 = None
        self.axis = None
        self._stop = threading.Event()
        self._thread = None
        self.env = dict(os.environ)
        self.env["GPU_COSPLAY_SHIM_PASSTHROUGH"] = "1"

    def _query(self, fields):
        argv = [self.smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        if self.smi_id:
            argv.append("--id=" + self.smi_id)
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, timeout=10)
        if p.returncode != 0:
            raise PerfError("SMI_QUERY", (p.stderr or p.stdout).decode("utf-8", "replace").strip().split("\n")[0])
        lines = [ln for ln in p.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
        return parse_sample_line(fields, lines[0]) if lines else None

    def start(self):
        if not self.smi:
            self.reason = "no nvidia-smi on PATH"
            return self
        last = None
        for fields in SAMPLE_FIELD_SETS:
            try:
                row = self._query(fields)
            except Exception as exc:
                last = exc
                continue
            if row is not None:
                self.fields = fields
                break
        if self.fields is None:
            self.reason = "nvidia-smi --query-gpu failed: %s" % last
            return self
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="gpu-cosplay-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.is_set():
            try:
                row = self._query(self.fields)
                if row is not None and len(self.rows) < MAX_SAMPLE_ROWS:
                    row["tS"] = round(time.monotonic() - self.t0, 3)
                    row["axis"] = self.axis
                    self.rows.append(row)
            except Exception as exc:
                self.reason = "a sample failed: %s" % exc
            self._stop.wait(self.interval_s)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        return self.result()

    def result(self):
        # realValues: read with the shim passed through, so power limits are the GPU's, not the costume's
        out = {"source": "nvidia-smi" if self.fields else None, "realValues": bool(self.fields), "fields": self.fields,
               "count": len(self.rows), "rows": self.rows, "summary": summarise_samples(self.rows)}
        if self.reason:
            out["reason"] = self.reason
        return out


def summarise_samples(rows):
    """Spreads over every row, and per axis (rows are tagged with the axis being timed when they were taken)."""
    def spread(key):
        vals = [r[key] for r in rows if r.get(key) is not None]
        if not vals:
            return None
        return {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}

    mask = 0
    for r in rows:
        if r.get("throttleReasons"):
            mask |= r["throttleReasons"]
    out = {"smClockMHz": spread("smClockMHz"), "powerW": spread("powerW"), "powerLimitW": spread("powerLimitW"),
           "throttleReasons": decode_reasons(mask)}
    axes = sorted(set(r["axis"] for r in rows if r.get("axis")))
    if axes:
        out["byAxis"] = {a: summarise_samples([dict(r, axis=None) for r in rows if r.get("axis") == a]) for a in axes}
    return out


# ------------------------------------------------------------------------------------------------ device

def find_smi():
    """GPU_COSPLAY_NVIDIA_SMI (the host tool's own setting, e.g. a simulator) or nvidia-smi on PATH."""
    named = os.environ.get("GPU_COSPLAY_NVIDIA_SMI")
    if named and os.path.isfile(named) and os.access(named, os.X_OK):
        return named
    return shutil.which("nvidia-smi")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def driver_version(smi_id=None):
    smi = find_smi()
    if smi:
        env = dict(os.environ)
        env["GPU_COSPLAY_SHIM_PASSTHROUGH"] = "1"
        argv = [smi, "--query-gpu=driver_version", "--format=csv,noheader"] + (["--id=" + smi_id] if smi_id else [])
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=10)
            lines = p.stdout.decode("utf-8", "replace").split()
            if p.returncode == 0 and lines and re.match(r"^\d+(\.\d+)+$", lines[0]):
                return lines[0]
        except Exception:
            pass
    try:
        with open("/proc/driver/nvidia/version") as fh:
            m = re.search(r"Kernel Module\s+(\d+(?:\.\d+)+)", fh.read())
            if m:
                return m.group(1)
    except OSError:
        pass
    return None


# ------------------------------------------------------------------------------------------------ main

def cuda_unusable_reason(torch):
    """Why torch cannot use CUDA, in words: a CPU-only build, the init error itself (MPS server not ready, a
    driver older than torch's CUDA), or no device visible."""
    built = getattr(getattr(torch, "version", None), "cuda", None)
    if built is None:
        return "torch %s is a CPU-only build (torch.version.cuda is None)" % getattr(torch, "__version__", "?")
    init = getattr(torch.cuda, "init", None)
    if init is not None:
        try:
            init()
        except Exception as exc:
            return "CUDA initialisation failed (torch built for CUDA %s): %s" % (built, _refusal_text(exc))
    return "torch (CUDA %s) sees no CUDA device (CUDA_VISIBLE_DEVICES=%s)" % (
        built, os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))


def real_device_name(smi_id=None):
    """The GPU's own name from the real nvidia-smi (the shim passed through): torch and NVML show the costume's."""
    smi = find_smi()
    if not smi:
        return None
    env = dict(os.environ)
    env["GPU_COSPLAY_SHIM_PASSTHROUGH"] = "1"
    argv = [smi, "--query-gpu=name", "--format=csv,noheader"] + (["--id=" + smi_id] if smi_id else [])
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=10)
        lines = [ln.strip() for ln in p.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[0] if p.returncode == 0 and lines else None
    except Exception:
        return None


def mps_record():
    """The MPS variables this process sees and what the entrypoint wrote about the session's daemon."""
    status = None
    try:
        with open(os.environ.get("GPU_COSPLAY_MPS_STATUS_FILE", MPS_STATUS_FILE)) as fh:
            status = fh.read().strip()[:500]
    except OSError:
        pass
    return {"env": {k: os.environ[k] for k in RECORDED_ENV if k in os.environ}, "entrypointStatus": status}


def open_cuda(torch, smi_id):
    """Everything about the device that a report needs, each read named as the step it is."""
    STEP["name"] = "mem_get_info"
    free, total = torch.cuda.mem_get_info(0)
    STEP["name"] = "get_device_name"
    client_name = torch.cuda.get_device_name(0)
    STEP["name"] = "get_device_properties"
    props = torch.cuda.get_device_properties(0)
    sms = getattr(props, "multi_processor_count", None)
    STEP["name"] = "nvidia-smi"
    real = real_device_name(smi_id)
    dev = {"name": real or client_name, "clientName": client_name, "realName": real, "kind": "cuda",
           "driver": driver_version(smi_id), "smCount": sms, "torchCuda": getattr(torch.version, "cuda", None)}
    return free, total, dev


def measure(device="auto", vram=True, smi_id=None, sample=True, torch_module=None, driver_factory=None):
    """The measurement as a JSON-able dict:
    {schema, device: {name, kind, driver, ...}, sizes, axes: {fp32, bf16, bandwidth, vram}, samples, elapsedS}
    Each axis: {measured (null when it failed or was skipped), unit, ...details, error?/skipped?}.
    device "cuda" (what verify asks in a session, and calibrate) fails with NO_CUDA and the reason when CUDA
    cannot be used; "cpu" measures the CPU on purpose; "auto" takes CUDA when it works."""
    started = time.monotonic()
    STEP["name"] = "import torch"
    torch = torch_module
    if torch is None:
        try:
            import torch
        except Exception as exc:
            raise PerfError("NO_TORCH", "torch is not importable: %s: %s" % (type(exc).__name__, exc))
    STEP["name"] = "cuda.is_available"
    cuda = False
    if device != "cpu":
        try:
            cuda = bool(torch.cuda.is_available())
        except Exception:
            cuda = False
    if device == "cuda" and not cuda:
        raise PerfError("NO_CUDA", "CUDA could not be used: %s" % cuda_unusable_reason(torch))
    kind = "cuda" if cuda and device != "cpu" else "cpu"
    if kind == "cuda":
        try:
            free, total, dev = open_cuda(torch, smi_id)
        except Exception as exc:
            raise PerfError("DEVICE_OPEN", "opening the CUDA device failed at %s: %s" % (STEP["name"], _refusal_text(exc)))
        where = "cuda:0"
    else:
        free, total = 0, 0
        dev = {"name": cpu_name(), "kind": "cpu", "driver": None,
               "reason": "asked for the CPU (--device cpu)" if device == "cpu" else "no CUDA: %s" % cuda_unusable_reason(torch)}
        where = "cpu"
    dev["torch"] = str(torch.__version__)
    dev["mps"] = mps_record()
    sizes = plan_sizes(kind, free)
    sizes.update({"warmupMinS": WARM_MIN_S[kind], "warmupMaxS": WARM_MAX_S[kind], "windowS": WINDOW_S[kind],
                  "callTargetS": CALL_TARGET_S, "sampleIntervalS": SAMPLE_INTERVAL_S})
    clock = Clock(torch, kind)
    STEP["name"] = "sampler"
    sampler = Sampler(smi_id).start() if sample else None
    axes = {}
    device_s = 0.0
    try:
        with MatmulPolicy(torch) as policy:
            dev["matmul"] = policy.effective()
            for axis, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
                STEP["name"] = axis
                if sampler:
                    sampler.axis = axis
                try:
                    axes[axis] = measure_gemm(torch, clock, where, dtype, sizes["gemmN"][axis], sizes["warmup"], sizes["reps"])
                    device_s += axes[axis].pop("deviceS", 0.0)
                except Exception as exc:
                    axes[axis] = {"measured": None, "unit": "TFLOPS", "error": _refusal_text(exc)}
                if kind == "cuda":
                    torch.cuda.empty_cache()
        STEP["name"] = "bandwidth"
        if sampler:
            sampler.axis = "bandwidth"
        try:
            axes["bandwidth"] = measure_copy(torch, clock, where, sizes["copyBytes"], sizes["warmup"], sizes["reps"])
            device_s += axes["bandwidth"].pop("deviceS", 0.0)
        except Exception as exc:
            axes["bandwidth"] = {"measured": None, "unit": "GB/s", "error": _refusal_text(exc)}
        if kind == "cuda":
            torch.cuda.empty_cache()
        STEP["name"] = "vram"
        if sampler:
            sampler.axis = "vram"
        axes["vram"] = measure_vram_axis(torch, kind, total, vram, driver_factory)
    finally:
        samples = sampler.stop() if sampler else {"source": None, "count": 0, "rows": [], "reason": "sampling off"}
    STEP["name"] = "report"
    return {"schema": SCHEMA, "device": dev, "sizes": sizes, "axes": axes, "samples": samples,
            "timedDeviceS": round(device_s, 3), "elapsedS": round(time.monotonic() - started, 2)}


def measure_vram_axis(torch, kind, total_bytes, enabled, driver_factory=None):
    if kind != "cuda":
        return {"measured": None, "unit": "GiB", "skipped": "CPU run: no device memory cap to probe"}
    if not enabled:
        return {"measured": None, "unit": "GiB", "skipped": "not asked (--no-vram)"}
    cap = int(total_bytes)  # in a session the hook reports what the card reports to CUDA as the total
    try:
        t = probe_vram(torch, cap)
    except Exception as exc:
        return {"measured": None, "unit": "GiB", "capGiB": cap / GIB, "error": _refusal_text(exc)}
    c = probe_cupy(cap)
    # under MPS the hard limit is the pinned one (what the card reports; the context comes out of it as on the card)
    pinned_mib = os.environ.get("GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB", "")
    limit = int(pinned_mib) * MIB if pinned_mib.isdigit() else cap
    d = probe_hard(torch, limit, driver_factory)
    usable = t["usableBytes"]
    return {"measured": None if usable is None else round(usable / GIB, 3), "unit": "GiB", "capGiB": round(cap / GIB, 3),
            "underCapOk": t["underCapOk"], "overCapRefused": t["overCapRefused"], "search": t, "cupy": c,
            "driver": d, "hard": d.get("hard"), "hardReason": d.get("reason")}


def run(argv, torch_module=None, driver_factory=None):
    """(exit code, stdout text): 0 and the measurement, 2 and usage, or 3 and one {"error": {code, message}} naming
    the step that failed; never a traceback."""
    device = "auto"
    smi_id = None
    vram = True
    sample = True
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--device" and i + 1 < len(argv):
            device = argv[i + 1]
            i += 1
        elif a.startswith("--device="):
            device = a.split("=", 1)[1]
        elif a == "--smi-id" and i + 1 < len(argv):
            smi_id = argv[i + 1]
            i += 1
        elif a == "--smi" and i + 1 < len(argv):
            os.environ["GPU_COSPLAY_NVIDIA_SMI"] = argv[i + 1]
            i += 1
        elif a == "--no-vram":
            vram = False
        elif a == "--no-samples":
            sample = False
        elif a in ("--perf", "--json"):
            pass
        else:
            sys.stderr.write("usage: gpu_cosplay_perf.py [--device auto|cuda|cpu] [--smi-id UUID] [--smi PATH] "
                             "[--no-vram] [--no-samples]\n")
            return 2, ""
        i += 1
    if device not in ("auto", "cuda", "cpu"):
        sys.stderr.write("--device must be auto, cuda or cpu\n")
        return 2, ""
    try:
        result = measure(device=device, vram=vram, smi_id=smi_id, sample=sample, torch_module=torch_module,
                         driver_factory=driver_factory)
        return 0, json.dumps(result, indent=2) + "\n"
    except PerfError as exc:
        return 3, json.dumps({"error": {"code": exc.code, "message": str(exc)}}) + "\n"
    except Exception as exc:
        return 3, json.dumps({"error": {"code": "PERF_UNEXPECTED", "message": "the measurement failed at %s: %s" % (
            STEP["name"], _refusal_text(exc))}}) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    rc, text = run(argv)
    sys.stdout.write(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())
