#!/usr/bin/env python3
"""gpu-cosplay self-test, run inside a session (`gpu-cosplay verify` execs it).

Prints JSON {"checks": [{"name", "status": PASS|FAIL|SKIP, "detail"}], "summary": {...}} (or a table with
--text) and exits 1 when any check FAILs. Checks that need a GPU or a library that is absent SKIP with why.
Standard library only; torch / pynvml are used when importable.

`verify.py --perf [--device auto|cuda|cpu]` measures instead (gpu_cosplay_perf.py): FP32/BF16 GEMM, copy
bandwidth, the VRAM cap, clock/power samples, as JSON. The host's `gpu-cosplay verify --perf` adds the plan's
expectations and the verdicts.
"""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

MIB = 1024 * 1024
HOST_NAME_HINTS = ("H200", "H100", "H800", "A100", "A800", "GH200", "B200", "GB200", "A30")


class Checks(object):
    def __init__(self):
        self.items = []

    def add(self, name, status, detail=""):
        self.items.append({"name": name, "status": status, "detail": str(detail)})

    def run(self, name, fn):
        try:
            res = fn()
            if res is None:
                res = ("PASS", "")
            self.add(name, res[0], res[1])
        except Exception as exc:  # a crashing check is a FAIL with the reason, never a crash of verify
            self.add(name, "FAIL", "%s: %s" % (type(exc).__name__, exc))


def _contract():
    import gpu_cosplay_env
    return gpu_cosplay_env.load()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--perf" in argv:
        import gpu_cosplay_perf
        return gpu_cosplay_perf.main([a for a in argv if a != "--perf"])
    text = "--text" in argv
    checks = Checks()
    try:
        c = _contract()
    except Exception as exc:
        c = None
        checks.add("env", "FAIL", "cannot read the contract: %s" % exc)
    if c is None:
        if not checks.items:
            checks.add("env", "FAIL", "GPU_COSPLAY_NAME / GPU_COSPLAY_VRAM_MIB (or _GB) are not set")
        return finish(checks, text)
    checks.add("env", "PASS", "%s, %d MiB cap%s" % (
        c.name, c.vram_mib, ", physical %d MiB" % c.phys_vram_mib if c.phys_vram_mib else ""))

    checks.run("user", lambda: check_user())
    real_holder = {}
    checks.run("shim.shadows", lambda: check_shim_shadows(real_holder))
    checks.run("shim.output", lambda: check_shim_output(c))
    checks.run("hook.loaded", lambda: check_hook_loaded())
    torch = None
    try:
        import torch  # noqa: F401
    except Exception as exc:
        checks.add("torch", "SKIP", "torch not importable: %s" % exc)
    if torch is not None:
        checks.run("torch.policy", lambda: check_torch_policy(torch, c))
        cuda = False
        try:
            cuda = bool(torch.cuda.is_available())
        except Exception:
            pass
        if not cuda:
            for name in ("torch.name", "torch.properties", "torch.mem_get_info", "torch.alloc_under_cap",
                         "torch.alloc_over_cap"):
                checks.add(name, "SKIP", "no CUDA device visible to torch")
        else:
            checks.run("torch.name", lambda: check_torch_name(torch, c))
            checks.run("torch.properties", lambda: check_torch_props(torch, c))
            checks.run("torch.mem_get_info", lambda: check_torch_mem(torch, c))
            checks.run("torch.alloc_under_cap", lambda: check_alloc(torch, c, under=True))
            checks.run("torch.alloc_over_cap", lambda: check_alloc(torch, c, under=False))
    check_pynvml(checks, c)
    checks.run("jax_cupy.env", lambda: check_framework_env(c))
    return finish(checks, text)


def finish(checks, text):
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for it in checks.items:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    if text:
        w = max([len(i["name"]) for i in checks.items] + [5])
        for it in checks.items:
            sys.stdout.write("%-4s  %s  %s\n" % (it["status"], it["name"].ljust(w), it["detail"]))
        sys.stdout.write("%d passed, %d failed, %d skipped\n" % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    else:
        sys.stdout.write(json.dumps({"checks": checks.items, "summary": counts}, indent=2) + "\n")
    return 1 if counts["FAIL"] else 0


# ------------------------------------------------------------------------------------------------ checks

def check_user():
    uid = os.getuid()
    want = os.environ.get("GPU_COSPLAY_UID", "").strip()
    if want:
        if str(uid) != want:
            return ("FAIL", "uid %d, expected GPU_COSPLAY_UID=%s" % (uid, want))
    if uid == 0:
        return ("FAIL", "running as root")
    return ("PASS", "uid %d" % uid)


def check_shim_shadows(holder):
    which = shutil.which("nvidia-smi")
    if not which:
        return ("FAIL", "no nvidia-smi on PATH")
    with open(which, "rb") as fh:
        head = fh.read(4096)
    if b"gpu-cosplay nvidia-smi shim" not in head:
        return ("FAIL", "`which nvidia-smi` is %s, not the gpu-cosplay shim" % which)
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("gpu_cosplay_shim", which)
    spec = importlib.util.spec_from_loader("gpu_cosplay_shim", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    real = mod.find_real(self_path=which)
    if not real:
        return ("FAIL", "shim at %s finds no real nvidia-smi behind it" % which)
    holder["real"] = real
    return ("PASS", "%s shadows %s" % (which, real))


def check_shim_output(c):
    which = shutil.which("nvidia-smi")
    if not which:
        return ("SKIP", "no nvidia-smi on PATH")
    try:
        p = subprocess.run([which, "-L"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        q = subprocess.run([which, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    except subprocess.TimeoutExpired:
        return ("FAIL", "nvidia-smi timed out")
    out = p.stdout.decode("utf-8", "replace") + q.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        return ("FAIL", "nvidia-smi -L exited %d: %s" % (p.returncode, p.stderr.decode("utf-8", "replace")[:200]))
    if c.name not in out:
        return ("FAIL", "target name missing from nvidia-smi output: %r" % out[:300])
    leaked = [h for h in HOST_NAME_HINTS if h in out and h not in c.name]
    if leaked:
        return ("FAIL", "host name leaks (%s): %r" % (",".join(leaked), out[:300]))
    if str(c.vram_mib) not in out:
        return ("FAIL", "memory.total is not %d MiB: %r" % (c.vram_mib, q.stdout[:200]))
    return ("PASS", out.strip().splitlines()[0] if out.strip() else "")


def check_hook_loaded():
    mod = sys.modules.get("gpu_cosplay_hook")
    if mod is None:
        return ("FAIL", "gpu_cosplay_hook not in sys.modules (is gpu_cosplay.pth in site-packages?)")
    st = mod.state()
    if st is None:
        return ("FAIL", "hook imported but inactive")
    return ("PASS", "loaded from %s" % getattr(mod, "__file__", "?"))


def _hook_state():
    mod = sys.modules.get("gpu_cosplay_hook")
    return mod.state() if mod else None


def check_torch_policy(torch, c):
    problems = []
    try:
        if not c.has_tf32:
            if torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32:
                problems.append("TF32 still on")
    except Exception as exc:
        problems.append("tf32: %s" % exc)
    try:
        if not c.has_bf16 and torch.cuda.is_bf16_supported():
            problems.append("is_bf16_supported() is True")
    except Exception as exc:
        if torch.cuda.is_available():
            problems.append("bf16: %s" % exc)
    if problems:
        return ("FAIL", "; ".join(problems))
    return ("PASS", "tf32=%s bf16=%s" % ("allowed" if c.has_tf32 else "off", "yes" if c.has_bf16 else "no"))


def check_torch_name(torch, c):
    n = torch.cuda.get_device_name(0)
    return ("PASS", n) if n == c.name else ("FAIL", "get_device_name(0) = %r" % n)


def check_torch_props(torch, c):
    p = torch.cuda.get_device_properties(0)
    if p.name != c.name or p.total_memory != _expected_total(c):
        return ("FAIL", "name=%r total_memory=%d" % (p.name, p.total_memory))
    return ("PASS", "name=%r total_memory=%d" % (p.name, p.total_memory))


def _expected_total(c):
    """What torch should report as the card's total: its CUDA total, never above the physical memory."""
    st = _hook_state()
    phys = st.phys_total.get(0) if st else None
    return min(c.cuda_total_bytes, phys) if phys else c.cuda_total_bytes


def check_torch_mem(torch, c):
    free, total = torch.cuda.mem_get_info(0)
    if total != _expected_total(c) or free > total:
        return ("FAIL", "free=%d total=%d" % (free, total))
    detail = "free=%d total=%d" % (free, total)
    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "get_memory_info"):
        f2, t2 = acc.get_memory_info(0)
        if t2 != _expected_total(c):
            return ("FAIL", "torch.accelerator.get_memory_info total=%d" % t2)
        detail += "; accelerator total=%d" % t2
    return ("PASS", detail)


def check_alloc(torch, c, under):
    st = _hook_state()
    phys = st.phys_total.get(0) if st else None
    cap = c.alloc_cap_bytes
    if phys is not None and cap >= phys:
        return ("SKIP", "cap %d >= physical %d: nothing to enforce" % (cap, phys))
    torch.cuda.empty_cache()
    base = torch.cuda.memory_reserved(0)
    margin = 64 * MIB
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    if under:
        n = cap - base - 2 * margin
        if n <= 0:
            return ("SKIP", "cap too small for the test")
        x = torch.empty(n, dtype=torch.uint8, device="cuda:0")
        del x
        torch.cuda.empty_cache()
        return ("PASS", "allocated %d MiB under a %d MiB cap" % (n // MIB, c.alloc_cap_mib))
    n = cap - base + margin
    try:
        x = torch.empty(n, dtype=torch.uint8, device="cuda:0")
    except oom as exc:
        torch.cuda.empty_cache()
        return ("PASS", "%s for %d MiB" % (type(exc).__name__, n // MIB))
    del x
    torch.cuda.empty_cache()
    return ("FAIL", "allocating %d MiB over a %d MiB cap succeeded" % (n // MIB, c.alloc_cap_mib))


def check_pynvml(checks, c):
    try:
        import pynvml
    except Exception as exc:
        checks.add("pynvml.name", "SKIP", "pynvml not importable: %s" % exc)
        checks.add("pynvml.memory", "SKIP", "pynvml not importable")
        return
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as exc:
        checks.add("pynvml.name", "SKIP", "NVML unavailable: %s" % exc)
        checks.add("pynvml.memory", "SKIP", "NVML unavailable")
        return

    def name():
        n = pynvml.nvmlDeviceGetName(h)
        if isinstance(n, bytes):
            n = n.decode("utf-8", "replace")
        return ("PASS", n) if n == c.name else ("FAIL", "nvmlDeviceGetName = %r" % n)

    def mem():
        m = pynvml.nvmlDeviceGetMemoryInfo(h)
        if int(m.total) != c.cap_bytes or int(m.free) + int(m.used) > int(m.total):
            return ("FAIL", "total=%d used=%d free=%d" % (m.total, m.used, m.free))
        return ("PASS", "total=%d used=%d free=%d" % (m.total, m.used, m.free))

    checks.run("pynvml.name", name)
    checks.run("pynvml.memory", mem)


def check_framework_env(c):
    import gpu_cosplay_env
    want = gpu_cosplay_env.framework_env_for(c)
    if not want:
        return ("SKIP", "no cap")
    bad = ["%s=%r (want %s)" % (k, os.environ.get(k), v) for k, v in want if os.environ.get(k) != v]
    if bad:
        return ("FAIL", "; ".join(bad))
    return ("PASS", " ".join("%s=%s" % kv for kv in want))


if __name__ == "__main__":
    sys.exit(main())
