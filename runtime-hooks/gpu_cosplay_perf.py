#!/usr/bin/env python3
"""gpu-cosplay performance measurement: what this device really delivers.

Used in two places: `verify.py --perf` inside a session (through the costume, as the user's code sees it) and
`gpu-cosplay calibrate` on the host (the whole GPU, CUDA_VISIBLE_DEVICES=<its UUID>). It only measures; the
verdicts (PASS/WARN/FAIL against the plan) are computed by the host tool (src/plan/perf-verdict.ts), so the
bands live in one place.

Measures, with torch (CUDA events on CUDA, time.perf_counter on CPU; median of N after warm-up):
  fp32       FP32 GEMM TFLOPS, TF32 off (allow_tf32 False, matmul precision "highest")
  bf16       BF16 GEMM TFLOPS with FP32 accumulate (reduced-precision reductions off)
  bandwidth  device-to-device copy GB/s, counting bytes read + bytes written
  vram       the cap: allocating up to it works, one GiB more is refused (torch; CuPy too when installed,
             once through CuPy's pool and once as a raw cudaMalloc, which shows whether the cap is hard)
and samples SM clock, power and throttle reasons with `nvidia-smi --query-gpu` in a background thread. In a
session nvidia-smi is the costume shim, which would rewrite power limits to the target's; the sampler sets
GPU_COSPLAY_SHIM_PASSTHROUGH=1 so the shim execs the real binary and the samples are the real values.

Sizes adapt to the memory torch reports free (in a session: the cap) and are small on CPU, so a CPU run takes
a few seconds and a GPU run stays well under 30 s.

Prints one JSON object on stdout (see `measure`). On a fatal problem prints {"error": {"code", "message"}}
and exits 3. Standard library plus torch (and cupy when importable).
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

# 8192^3 is the size the reference figures were taken at (H100 SXM ~800, H200 ~790 BF16 TFLOP/s).
GEMM_MAX_N = 8192
GEMM_MIN_N = 1024
COPY_MAX_BYTES = GIB
COPY_MIN_BYTES = 64 * MIB
# a timed sample runs the op enough times to last at least this long, so event resolution does not matter
MIN_SAMPLE_S = {"cuda": 0.02, "cpu": 0.05}
# what "allocating up to the cap" leaves aside for the CUDA context's own bookkeeping
VRAM_MARGIN_BYTES = 128 * MIB

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
SAMPLE_INTERVAL_S = 0.5
MAX_SAMPLE_ROWS = 120


class PerfError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


# ------------------------------------------------------------------------------------------------ sizes

def plan_sizes(kind, free_bytes):
    """GEMM sizes and the copy buffer for a device with `free_bytes` usable (ignored on CPU)."""
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
    """Median seconds per call over `reps` samples, after `warmup` calls; each sample repeats fn `inner` times."""
    for _ in range(warmup):
        fn()
    clock.sync()
    once = max(clock.elapsed_s(fn, 1), 1e-7)
    inner = int(min(50, max(1, math.ceil(MIN_SAMPLE_S[clock.kind] / once))))
    if once > 1.0:  # a tiny slice at a low clock: fewer samples keep the run short
        reps = min(reps, 5)
    samples = [clock.elapsed_s(fn, inner) / inner for _ in range(reps)]
    return statistics.median(samples), {"inner": inner, "reps": reps}


# ------------------------------------------------------------------------------------------------ axes

def significant(x, digits=4):
    """CPU figures are tiny in TFLOPS; keep digits, not decimals."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, max(0, digits - 1 - int(math.floor(math.log10(abs(x))))))


def measure_gemm(torch, clock, device, dtype, n, warmup, reps):
    a = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    seconds, how = time_op(clock, lambda: torch.matmul(a, b, out=out), warmup, reps)
    del a, b, out
    return {"measured": significant(2.0 * n ** 3 / seconds / 1e12), "unit": "TFLOPS", "n": n, "medianS": seconds,
            "inner": how["inner"], "reps": how["reps"]}


def measure_copy(torch, clock, device, nbytes, warmup, reps):
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src.fill_(7)
    dst = torch.empty_like(src)
    seconds, how = time_op(clock, lambda: dst.copy_(src), warmup, reps)
    del src, dst
    # a copy reads every byte once and writes it once
    return {"measured": significant(2.0 * nbytes / seconds / 1e9), "unit": "GB/s", "bytes": nbytes, "medianS": seconds,
            "inner": how["inner"], "reps": how["reps"]}


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


def probe_vram(torch, cap_bytes):
    """Allocating up to the cap works (or how much does), one GiB past it is refused."""
    torch.cuda.empty_cache()
    base = torch.cuda.memory_reserved(0)
    under = cap_bytes - base - VRAM_MARGIN_BYTES
    usable = None
    tried = []
    for frac in (1.0, 0.9, 0.75, 0.5, 0.25):
        n = int(under * frac)
        if n <= 0:
            break
        tried.append(n)
        try:
            x = torch.empty(n, dtype=torch.uint8, device="cuda:0")
        except Exception as exc:
            if not _is_oom(torch, exc):
                raise
            torch.cuda.empty_cache()
            continue
        del x
        torch.cuda.empty_cache()
        usable = base + n
        break
    over = cap_bytes - base + GIB
    try:
        x = torch.empty(over, dtype=torch.uint8, device="cuda:0")
        refused = False
        del x
    except Exception as exc:
        if not _is_oom(torch, exc):
            raise
        refused = True
    torch.cuda.empty_cache()
    return {"usableBytes": usable, "underCapOk": usable is not None and usable == base + tried[0],
            "overCapRefused": refused, "overCapBytes": over}


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
    def spread(key):
        vals = [r[key] for r in rows if r.get(key) is not None]
        if not vals:
            return None
        return {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}

    mask = 0
    for r in rows:
        if r.get("throttleReasons"):
            mask |= r["throttleReasons"]
    return {"smClockMHz": spread("smClockMHz"), "powerW": spread("powerW"), "powerLimitW": spread("powerLimitW"),
            "throttleReasons": decode_reasons(mask)}


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

def measure(device="auto", vram=True, smi_id=None, sample=True):
    """The measurement as a JSON-able dict:
    {schema, device: {name, kind, driver, torch}, sizes, axes: {fp32, bf16, bandwidth, vram}, samples, elapsedS}
    Each axis: {measured (null when it failed or was skipped), unit, ...details, error?/skipped?}."""
    started = time.monotonic()
    try:
        import torch
    except Exception as exc:
        raise PerfError("NO_TORCH", "torch is not importable: %s: %s" % (type(exc).__name__, exc))
    cuda = False
    try:
        cuda = bool(torch.cuda.is_available())
    except Exception:
        pass
    if device == "cuda" and not cuda:
        raise PerfError("NO_CUDA", "no CUDA device visible to torch (CUDA_VISIBLE_DEVICES=%s)"
                        % os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
    kind = "cuda" if cuda and device != "cpu" else "cpu"
    if kind == "cuda":
        free, total = torch.cuda.mem_get_info(0)
        dev = {"name": torch.cuda.get_device_name(0), "kind": "cuda", "driver": driver_version(smi_id)}
        where = "cuda:0"
    else:
        free, total = 0, 0
        dev = {"name": cpu_name(), "kind": "cpu", "driver": None}
        where = "cpu"
    dev["torch"] = str(torch.__version__)
    sizes = plan_sizes(kind, free)
    clock = Clock(torch, kind)
    sampler = Sampler(smi_id).start() if sample else None
    axes = {}
    try:
        with MatmulPolicy(torch):
            for axis, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
                try:
                    axes[axis] = measure_gemm(torch, clock, where, dtype, sizes["gemmN"][axis], sizes["warmup"], sizes["reps"])
                except Exception as exc:
                    axes[axis] = {"measured": None, "unit": "TFLOPS", "error": "%s: %s" % (type(exc).__name__, exc)}
                if kind == "cuda":
                    torch.cuda.empty_cache()
        try:
            axes["bandwidth"] = measure_copy(torch, clock, where, sizes["copyBytes"], sizes["warmup"], sizes["reps"])
        except Exception as exc:
            axes["bandwidth"] = {"measured": None, "unit": "GB/s", "error": "%s: %s" % (type(exc).__name__, exc)}
        if kind == "cuda":
            torch.cuda.empty_cache()
        axes["vram"] = measure_vram_axis(torch, kind, total, vram)
    finally:
        samples = sampler.stop() if sampler else {"source": None, "count": 0, "rows": [], "reason": "sampling off"}
    return {"schema": SCHEMA, "device": dev, "sizes": sizes, "axes": axes, "samples": samples,
            "elapsedS": round(time.monotonic() - started, 2)}


def measure_vram_axis(torch, kind, total_bytes, enabled):
    if kind != "cuda":
        return {"measured": None, "unit": "GiB", "skipped": "CPU run: no device memory cap to probe"}
    if not enabled:
        return {"measured": None, "unit": "GiB", "skipped": "not asked (--no-vram)"}
    cap = int(total_bytes)  # in a session the hook reports the cap as the total
    try:
        t = probe_vram(torch, cap)
    except Exception as exc:
        return {"measured": None, "unit": "GiB", "capGiB": cap / GIB, "error": "%s: %s" % (type(exc).__name__, exc)}
    c = probe_cupy(cap)
    hard = None
    if c.get("installed") and "rawRefused" in c:
        hard = bool(c["rawRefused"])
    usable = t["usableBytes"]
    return {"measured": None if usable is None else round(usable / GIB, 3), "unit": "GiB", "capGiB": round(cap / GIB, 3),
            "underCapOk": t["underCapOk"], "overCapRefused": t["overCapRefused"], "cupy": c, "hard": hard}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
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
        elif a == "--no-vram":
            vram = False
        elif a == "--no-samples":
            sample = False
        elif a in ("--perf", "--json"):
            pass
        else:
            sys.stderr.write("usage: gpu_cosplay_perf.py [--device auto|cuda|cpu] [--smi-id UUID] [--no-vram] [--no-samples]\n")
            return 2
        i += 1
    if device not in ("auto", "cuda", "cpu"):
        sys.stderr.write("--device must be auto, cuda or cpu\n")
        return 2
    try:
        result = measure(device=device, vram=vram, smi_id=smi_id, sample=sample)
    except PerfError as exc:
        sys.stdout.write(json.dumps({"error": {"code": exc.code, "message": str(exc)}}) + "\n")
        return 3
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
