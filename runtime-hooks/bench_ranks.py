#!/usr/bin/env python3
"""What the ordinal mapping of several cosplayed GPUs (GPU_COSPLAY_RANKS) costs per call. Prints JSON.

One interpreter per torch with the .pth hook loaded, the contract and two ranks set and LOCAL_RANK=1, so the mapping
is on. Each op is timed through the hook's wrapper (as the script writes it: cuda:1 / 1) and through the original the
wrapper keeps as `__wrapped__` (with what the wrapper would hand it: cuda:0 / 0), the two interleaved round by round
(11 rounds of --loops calls) so that the load of a shared machine hits both alike. `withNs`/`withoutNs` are medians
of the rounds, `mappingAddsNs` the median of the per-round differences, `mappingAddsMinNs` the difference of the
fastest rounds (the least disturbed by other work). Where an original itself goes through
torch.cuda's index funnel (set_device), the funnel's wrapper is in both: the figure is the outer wrapper's.

--stub DIR (test/py/stubs): the stand-in torch, whose originals are Python, so the difference is the wrappers' own
cost with CUDA ordinals. --real PY|auto (a python whose torch imports; a CPU build will do): a real torch, where the
ops name "cpu" devices, which the mapping looks at and lets through. In the same process each op also runs inside
the torch.overrides.TorchFunctionMode the hook used before (same code, kept here for the comparison) on the
original: `torchFunctionModeAddsNs`; `a + a`, which no wrapper sees, shows that a mode taxes every op.
Usage: python3 bench_ranks.py [--stub DIR] [--real PY|auto] [--loops N]
"""
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
CONTRACT = {"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576", "GPU_COSPLAY_PHYS_VRAM_MIB": "40448"}
RANKS = json.dumps([{"uuid": "MIG-bench-0", "mpsPipe": None}, {"uuid": "MIG-bench-1", "mpsPipe": None}])
ROUNDS = 11

# op -> (through the wrapper, the original with what the wrapper hands it)
STUB_OPS = {
    "torch.zeros(8, device='cuda:1')": ("torch.zeros(8, device='cuda:1')", "torch.zeros.__wrapped__(8, device='cuda:0')"),
    "x.to('cuda:1')": ("x.to('cuda:1')", "T.to.__wrapped__(x, 'cuda:0')"),
    "x.to(torch.device('cuda:1'))": ("x.to(d1)", "T.to.__wrapped__(x, d0)"),
    "x.to(dtype) (no device)": ("x.to('float32')", "T.to.__wrapped__(x, 'float32')"),
    "x.cuda(1)": ("x.cuda(1)", "T.cuda.__wrapped__(x, 0)"),
    "torch.zeros(8) (no device)": ("torch.zeros(8)", "torch.zeros.__wrapped__(8)"),
    "torch.cuda.current_device()": ("torch.cuda.current_device()", "torch.cuda.current_device.__wrapped__()"),
    "torch.cuda.set_device(1)": ("torch.cuda.set_device(1)", "torch.cuda.set_device.__wrapped__(0)"),
}
REAL_OPS = {
    "torch.zeros(8, device='cpu')": ("torch.zeros(8, device='cpu')", "torch.zeros.__wrapped__(8, device='cpu')"),
    "x.to('cpu')": ("x.to('cpu')", "T.to.__wrapped__(x, 'cpu')"),
    "x.to(torch.device('cpu'))": ("x.to(dc)", "T.to.__wrapped__(x, dc)"),
    "x.to(torch.float64)": ("x.to(torch.float64)", "T.to.__wrapped__(x, torch.float64)"),
    "torch.zeros(8) (no device)": ("torch.zeros(8)", "torch.zeros.__wrapped__(8)"),
    "a + a (not wrapped)": ("x + x", "x + x"),
}

CHILD = r"""
import json, os, site, sys, time
site.addsitedir(%(here)r)
import torch
ops = json.loads(%(ops)r)
loops = %(loops)d
rounds = %(rounds)d
real = %(real)r
T = torch.Tensor
if real:
    x = torch.ones(8)
    dc = torch.device('cpu')
else:
    torch.cuda.set_device(1)
    x = torch.zeros(8, device='cuda:1')
    d0, d1 = torch.device('cuda:0'), torch.device('cuda:1')
mode = None
if real:
    # the TorchFunctionMode gpu_cosplay_hook entered on ranks other than 0 before the wrappers, as it was
    from torch.overrides import TorchFunctionMode

    def ordinal_of(device, current=None):
        if device is None:
            return current
        if isinstance(device, bool):
            return None
        if isinstance(device, int):
            return device
        if isinstance(device, str):
            kind, _, index = device.partition(":")
            if kind != "cuda":
                return None
            return int(index) if index.isdigit() else current
        if getattr(device, "type", None) != "cuda":
            return None
        index = getattr(device, "index", None)
        return current if index is None else int(index)

    def mapped(value):
        if isinstance(value, (str, int)) and not isinstance(value, bool) or type(value).__name__ == "device":
            ordinal = value if isinstance(value, int) else ordinal_of(value)
            if ordinal is not None and ordinal >= 0:
                return "cuda:0"
        return value

    class RankDevices(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = mapped(kwargs["device"])
            name = getattr(func, "__name__", "")
            if name in ("to", "cuda") and len(args) > 1:
                args = (args[0], mapped(args[1])) + tuple(args[2:])
            return func(*args, **kwargs)
    mode = RankDevices()

def med(v):
    v = sorted(v)
    return v[len(v) // 2]

def timed(code, g):
    t0 = time.perf_counter_ns()
    exec(code, g)
    return (time.perf_counter_ns() - t0) / loops

rows = []
for name, (stmt, base) in ops.items():
    g = dict(globals())
    c_with = compile('for _ in range(%%d):\n    %%s\n' %% (loops, stmt), name, 'exec')
    c_base = compile('for _ in range(%%d):\n    %%s\n' %% (loops, base), name, 'exec')
    w, b, diff, m, mdiff = [], [], [], [], []
    for _ in range(rounds):
        w.append(timed(c_with, g))
        b.append(timed(c_base, g))
        diff.append(w[-1] - b[-1])
        if mode is not None:
            with mode:  # the original inside the mode: what the mode alone adds
                m.append(timed(c_base, g))
            mdiff.append(m[-1] - b[-1])
    row = {'op': name, 'withNs': round(med(w), 1), 'withoutNs': round(med(b), 1), 'mappingAddsNs': round(med(diff), 1),
           'mappingAddsMinNs': round(min(w) - min(b), 1)}
    if mode is not None:
        row['torchFunctionModeNs'] = round(med(m), 1)
        row['torchFunctionModeAddsNs'] = round(med(mdiff), 1)
        row['torchFunctionModeAddsMinNs'] = round(min(m) - min(b), 1)
    rows.append(row)
st = sys.modules['gpu_cosplay_hook'].state()
print('@@' + json.dumps({'rows': rows, 'mappingActive': bool(st and st.ranks is not None and st.ranks.rank == 1),
                         'errors': st.errors if st else None, 'torch': torch.__version__,
                         'pythonVersion': sys.version.split()[0]}))
"""


def measure(py, ops, loops, pythonpath=None, real=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_") and k not in ("LOCAL_RANK", "PYTHONPATH")}
    env.update(CONTRACT, GPU_COSPLAY_RANKS=RANKS, LOCAL_RANK="1", PYTHONDONTWRITEBYTECODE="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    code = CHILD % {"here": HERE, "ops": json.dumps(ops), "loops": loops, "rounds": ROUNDS, "real": real}
    p = subprocess.run([py, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=900)
    if p.returncode != 0:
        return {"python": py, "error": p.stderr.decode("utf-8", "replace")[-800:]}
    line = [ln for ln in p.stdout.decode().splitlines() if ln.startswith("@@")][-1]
    return dict(json.loads(line[2:]), python=py)


def torch_python(candidate):
    for py in ([candidate] if candidate != "auto" else [sys.executable, "/usr/bin/python3"]):
        try:
            if py and subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     timeout=120).returncode == 0:
                return py
        except Exception:
            pass
    return None


def main(argv):
    loops = int(argv[argv.index("--loops") + 1]) if "--loops" in argv else 20000
    result = {"loops": loops, "rounds": ROUNDS, "machine": "%s, %d CPUs" % (platform.processor() or platform.machine(), os.cpu_count() or 0)}
    if "--stub" in argv:
        stub = os.path.realpath(argv[argv.index("--stub") + 1])
        result["stub"] = measure(sys.executable, STUB_OPS, loops, stub, real=False)
    if "--real" in argv:
        py = torch_python(argv[argv.index("--real") + 1])
        result["real"] = measure(py, REAL_OPS, loops, None, real=True) if py else {"skipped": "no python with torch found"}
    print(json.dumps(result, indent=2))
    return 0 if all("error" not in r for r in (result.get("stub") or {}, result.get("real") or {})) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
