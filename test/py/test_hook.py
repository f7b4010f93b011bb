"""The .pth hook against stand-in torch / pynvml modules (test/py/stubs), each case in a fresh interpreter."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(ROOT, "runtime-hooks")
STUBS = os.path.join(ROOT, "test", "py", "stubs")
MIB = 1024 * 1024

CONTRACT = {
    "GPU_COSPLAY_CARD": "rtx3090",
    "GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090",
    "GPU_COSPLAY_VRAM_GB": "24",
    "GPU_COSPLAY_VRAM_MIB": "24576",
    "GPU_COSPLAY_PHYS_VRAM_MIB": "40448",
    "GPU_COSPLAY_TDP_W": "350",
    "GPU_COSPLAY_FP32_TFLOPS": "35.6",
    "GPU_COSPLAY_BF16_TFLOPS": "71",
    "GPU_COSPLAY_BW_GBS": "936",
    "GPU_COSPLAY_HAS_BF16": "1",
    "GPU_COSPLAY_HAS_TF32": "1",
    "GPU_COSPLAY_SESSION": "s1",
}

PRELUDE = "import site, sys\nsite.addsitedir(%r)\n" % HOOKS


def clean_env(extra=None, contract=True):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPU_COSPLAY_") and not k.startswith("STUB_") and "ALLOC_CONF" not in k}
    env["PYTHONPATH"] = STUBS
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if contract:
        env.update(CONTRACT)
    env.update(extra or {})
    return env


def run_py(code, extra=None, contract=True, python=None):
    p = subprocess.run([python or sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(extra, contract),
                       cwd=ROOT, timeout=60)
    return p


def run_json(testcase, code, extra=None, contract=True):
    p = run_py(textwrap.dedent(code) + "\nimport json as _j\nprint('@@' + _j.dumps(out))\n", extra, contract)
    testcase.assertEqual(p.returncode, 0, p.stderr.decode())
    line = [l for l in p.stdout.decode().splitlines() if l.startswith("@@")][-1]
    return json.loads(line[2:])


TORCH_PROBE = """
import torch
out = {}
out['hook'] = 'gpu_cosplay_hook' in sys.modules
out['installed'] = hasattr(sys, '_gpu_cosplay_hook_state') or any(getattr(f, '_gpu_cosplay', False) for f in sys.meta_path)
out['count_at_import'] = torch.cuda.device_count()
out['name'] = torch.cuda.get_device_name(0)
p = torch.cuda.get_device_properties(0)
out['prop_name'] = p.name
out['prop_total'] = p.total_memory
out['prop_major'] = p.major
out['prop_sm'] = p.multi_processor_count
out['prop_isinstance'] = isinstance(p, torch.cuda._CudaDeviceProperties)
out['prop_repr'] = repr(p)
out['calls'] = torch.cuda.calls
free, total = torch.cuda.mem_get_info(0)
out['free'] = free; out['total'] = total
out['mem_via_submodule'] = torch.cuda.memory.mem_get_info(0)
out['acc'] = list(torch.accelerator.get_memory_info(0))
out['bf16'] = torch.cuda.is_bf16_supported()
out['tf32'] = [torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32]
"""


class HookTorchTest(unittest.TestCase):
    def test_name_properties_meminfo_and_fraction_on_lazy_init(self):
        out = run_json(self, TORCH_PROBE)
        self.assertTrue(out["hook"])
        self.assertTrue(out["installed"])
        self.assertEqual(out["count_at_import"], 0)  # lazy: nothing known at import time
        self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
        self.assertEqual(out["prop_name"], "NVIDIA GeForce RTX 3090")
        self.assertEqual(out["prop_total"], 24576 * MIB)
        self.assertEqual(out["prop_major"], 9)  # forwarded
        self.assertEqual(out["prop_sm"], 60)
        self.assertTrue(out["prop_isinstance"])
        self.assertIn("name='NVIDIA GeForce RTX 3090'", out["prop_repr"])
        self.assertIn("total_memory=24576MB", out["prop_repr"])
        fr = [c for c in out["calls"] if c[0] == "set_per_process_memory_fraction"]
        self.assertEqual(len(fr), 1)
        self.assertAlmostEqual(fr[0][1], 24576 / 40448.0, places=9)
        self.assertEqual(fr[0][2], 0)
        self.assertEqual(out["total"], 24576 * MIB)
        self.assertLessEqual(out["free"], out["total"])
        self.assertEqual(out["mem_via_submodule"][1], 24576 * MIB)
        self.assertEqual(out["acc"][1], 24576 * MIB)
        self.assertTrue(out["bf16"])
        self.assertEqual(out["tf32"], [True, True])

    def test_cap_is_enforced_by_the_fraction(self):
        out = run_json(self, """
            import torch
            torch.cuda.get_device_name(0)
            out = {}
            torch.cuda.allocate(24576 * 1024 * 1024 - 64 * 1024 * 1024)
            try:
                torch.cuda.allocate(128 * 1024 * 1024)
                out['over'] = 'allocated'
            except torch.OutOfMemoryError:
                out['over'] = 'oom'
            free, total = torch.cuda.mem_get_info()
            out['free'] = free
        """)
        self.assertEqual(out["over"], "oom")
        self.assertEqual(out["free"], 64 * MIB)  # cap - reserved

    def test_the_card_as_it_reports_itself_and_a_cap_no_higher_than_the_hard_limit(self):
        # an RTX 3090 reports 24268 MiB to CUDA of its 24576; under MPS the allocator cap is the pinned limit
        card = {"GPU_COSPLAY_CUDA_TOTAL_MIB": "24268", "GPU_COSPLAY_ALLOC_CAP_MIB": "24268"}
        out = run_json(self, TORCH_PROBE, card)
        self.assertEqual(out["prop_total"], 24268 * MIB)
        self.assertIn("total_memory=24268MB", out["prop_repr"])
        self.assertEqual([out["total"], out["acc"][1], out["mem_via_submodule"][1]], [24268 * MIB] * 3)
        fr = [c for c in out["calls"] if c[0] == "set_per_process_memory_fraction"]
        self.assertAlmostEqual(fr[0][1], 24268 / 40448.0, places=9)
        # without MPS: the cap is the card less a context, and torch refuses past it; free never reads above it
        out = run_json(self, """
            import torch
            torch.cuda.get_device_name(0)
            out = {'total': torch.cuda.get_device_properties(0).total_memory}
            torch.cuda.allocate(23865 * 1024 * 1024 - 32 * 1024 * 1024)
            try:
                torch.cuda.allocate(64 * 1024 * 1024)
                out['over'] = 'allocated'
            except torch.OutOfMemoryError:
                out['over'] = 'oom'
            out['free'] = torch.cuda.mem_get_info()[0]
            torch.cuda.set_per_process_memory_fraction(1.0, 0)
            out['user_fraction'] = torch.cuda.calls[-1][1]
        """, {"GPU_COSPLAY_CUDA_TOTAL_MIB": "24268", "GPU_COSPLAY_ALLOC_CAP_MIB": "23865"})
        self.assertEqual(out["total"], 24268 * MIB)
        self.assertEqual(out["over"], "oom")
        self.assertEqual(out["free"], 32 * MIB)
        # a user's "all of it" is all the card reports, but never past the cap
        self.assertAlmostEqual(out["user_fraction"], 23865 / 40448.0, places=9)

    def test_fallback_without_lazy_call(self):
        out = run_json(self, TORCH_PROBE, {"STUB_TORCH_NO_LAZY_CALL": "1"})
        fr = [c for c in out["calls"] if c[0] == "set_per_process_memory_fraction"]
        self.assertEqual(len(fr), 1)
        self.assertEqual(out["prop_total"], 24576 * MIB)

    def test_bf16_and_tf32_policy(self):
        out = run_json(self, TORCH_PROBE, {"GPU_COSPLAY_HAS_BF16": "0", "GPU_COSPLAY_HAS_TF32": "0",
                                           "GPU_COSPLAY_BF16_TFLOPS": ""})
        self.assertFalse(out["bf16"])
        self.assertEqual(out["tf32"], [False, False])

    def test_no_env_leaves_torch_untouched(self):
        out = run_json(self, TORCH_PROBE, contract=False)
        # the .pth imports the hook module whatever the env; without the contract it installs nothing
        self.assertFalse(out["installed"])
        self.assertEqual(out["name"], "NVIDIA H200 MIG 3g.71gb")
        self.assertEqual(out["prop_total"], 40448 * MIB)
        self.assertEqual(out["calls"], [])
        self.assertEqual(out["total"], 40448 * MIB)

    def test_name_without_vram_is_inactive(self):
        out = run_json(self, TORCH_PROBE, {"GPU_COSPLAY_VRAM_MIB": "", "GPU_COSPLAY_VRAM_GB": ""})
        self.assertEqual(out["name"], "NVIDIA H200 MIG 3g.71gb")

    def test_faults_never_break_import(self):
        for where in ("install", "torch", "pynvml", "lazy"):
            with self.subTest(where=where):
                p = run_py("""
                    import torch, pynvml
                    pynvml.nvmlInit()
                    print(torch.cuda.get_device_name(0))
                    print(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0)))
                """, {"GPU_COSPLAY_HOOK_FAULT": where})
                self.assertEqual(p.returncode, 0, p.stderr.decode())
                self.assertEqual(p.stderr.decode(), "")

    def test_broken_stub_attribute_never_breaks_import(self):
        # a torch whose cuda module lacks most functions: the hook must shrug
        d = tempfile.mkdtemp()
        os.makedirs(os.path.join(d, "torch"))
        with open(os.path.join(d, "torch", "__init__.py"), "w") as fh:
            fh.write("class _Cuda(object):\n    def __getattr__(self, n):\n        raise RuntimeError('boom')\n"
                     "cuda = _Cuda()\n")
        env = {"PYTHONPATH": d}
        p = subprocess.run([sys.executable, "-c", PRELUDE + "import torch\nprint('ok')\n"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(clean_env(), **env), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertIn(b"ok", p.stdout)

    def test_idempotent_double_load(self):
        out = run_json(self, """
            import importlib, site
            import gpu_cosplay_hook
            site.addsitedir(%r)          # the .pth again
            importlib.reload(gpu_cosplay_hook)
            gpu_cosplay_hook.install()
            import torch
            torch.cuda.get_device_name(0)
            out = {}
            out['finders'] = sum(1 for f in sys.meta_path if getattr(f, '_gpu_cosplay', False))
            out['fraction_calls'] = len([c for c in torch.cuda.calls if c[0] == 'set_per_process_memory_fraction'])
            out['wrapped_once'] = not hasattr(torch.cuda.get_device_name.__wrapped__, '__wrapped__')
        """ % HOOKS)
        self.assertEqual(out["finders"], 1)
        self.assertEqual(out["fraction_calls"], 1)
        self.assertTrue(out["wrapped_once"])

    def test_user_fraction_is_relative_to_target(self):
        out = run_json(self, """
            import torch
            torch.cuda.get_device_name(0)
            torch.cuda.set_per_process_memory_fraction(0.5, 0)
            out = {'last': torch.cuda.calls[-1][1]}
        """)
        self.assertAlmostEqual(out["last"], 0.5 * 24576 / 40448.0, places=9)

    def _torch_with_version(self, version):
        import shutil
        d = tempfile.mkdtemp()
        shutil.copytree(os.path.join(STUBS, "torch"), os.path.join(d, "torch"))
        with open(os.path.join(d, "torch", "version.py"), "w") as fh:
            fh.write("__version__ = '%s'\ngit_version = 'stub'\n" % version)
        return {"PYTHONPATH": d + os.pathsep + STUBS}

    def test_alloc_conf_only_for_new_torch_and_appended(self):
        probe = "import torch, os\nout = {'conf': os.environ.get('PYTORCH_CUDA_ALLOC_CONF')}"
        old = run_json(self, probe, dict(self._torch_with_version("2.4.1"),
                                         PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"))
        self.assertEqual(old["conf"], "expandable_segments:True")
        new = run_json(self, probe, dict(self._torch_with_version("2.10.0+cu128"),
                                         PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"))
        self.assertEqual(new["conf"], "expandable_segments:True,per_process_memory_fraction:0.6075")
        fresh = run_json(self, probe, self._torch_with_version("2.11.0"))
        self.assertEqual(fresh["conf"], "per_process_memory_fraction:0.6075")
        user = run_json(self, probe, dict(self._torch_with_version("2.10.0"),
                                          PYTORCH_CUDA_ALLOC_CONF="per_process_memory_fraction:0.3"))
        self.assertEqual(user["conf"], "per_process_memory_fraction:0.3")

    def test_fit_report_written_at_exit(self):
        d = tempfile.mkdtemp()
        for i in range(2):
            p = run_py("""
                import torch
                torch.cuda.allocate(1000 * 1024 * 1024)
            """, {"GPU_COSPLAY_REPORT_DIR": os.path.join(d, "sub")})
            self.assertEqual(p.returncode, 0, p.stderr.decode())
        # no CUDA use -> no line; unwritable dir -> no crash
        run_py("import torch", {"GPU_COSPLAY_REPORT_DIR": os.path.join(d, "sub")})
        p = run_py("import torch\ntorch.cuda.allocate(1)", {"GPU_COSPLAY_REPORT_DIR": "/proc/nope/x"})
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stderr.decode(), "")
        with open(os.path.join(d, "sub", "fit.jsonl")) as fh:
            recs = [json.loads(l) for l in fh]
        self.assertEqual(len(recs), 2)
        for r in recs:
            self.assertEqual(r["peakReservedBytes"], 1000 * MIB)
            self.assertEqual(r["peakAllocatedBytes"], 1000 * MIB)
            self.assertEqual(r["capBytes"], 24576 * MIB)
            self.assertIsInstance(r["pid"], int)
            self.assertEqual(r["argv"], ["-c"])
            self.assertIsInstance(r["t"], float)


PYNVML_PROBE = """
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
out = {}
n = pynvml.nvmlDeviceGetName(h)
out['name_type'] = type(n).__name__
out['name'] = n.decode() if isinstance(n, bytes) else n
m = pynvml.nvmlDeviceGetMemoryInfo(h)
out['v1'] = [m.total, m.used, m.free]
m2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
out['v2'] = [m2.total, m2.reserved, m2.used, m2.free]
out['pl'] = [pynvml.nvmlDeviceGetPowerManagementLimit(h), pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h),
             pynvml.nvmlDeviceGetEnforcedPowerLimit(h), list(pynvml.nvmlDeviceGetPowerManagementLimitConstraints(h))]
"""


class HookPynvmlTest(unittest.TestCase):
    def test_str_style(self):
        out = run_json(self, PYNVML_PROBE)
        self.assertEqual(out["name_type"], "str")
        self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
        cap = 24576 * MIB
        total, used, free = out["v1"]
        self.assertEqual(total, cap)
        self.assertEqual(used + free, cap)
        self.assertEqual(used, 30700 * MIB if 30700 * MIB < cap else cap)
        t, r, u, f = out["v2"]
        self.assertEqual(t, cap)
        self.assertEqual(r + u + f, cap)
        self.assertEqual(out["pl"], [350000, 350000, 350000, [200000, 350000]])

    def test_bytes_style(self):
        out = run_json(self, PYNVML_PROBE, {"STUB_PYNVML_BYTES": "1"})
        self.assertEqual(out["name_type"], "bytes")
        self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")

    def test_no_env_untouched(self):
        out = run_json(self, PYNVML_PROBE, contract=False)
        self.assertEqual(out["name"], "NVIDIA H200")
        self.assertEqual(out["v1"][0], 143771 * MIB)
        self.assertEqual(out["pl"][0], 700000)

    def test_errors_of_the_original_still_raise(self):
        out = run_json(self, """
            import pynvml
            out = {}
            try:
                pynvml.nvmlDeviceGetName(('handle', 0))
                out['r'] = 'no error'
            except pynvml.NVMLError:
                out['r'] = 'NVMLError'
        """)
        self.assertEqual(out["r"], "NVMLError")


class HookPynvmlMpsTest(unittest.TestCase):
    PROBE = """
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
out = {'compute': [[p.pid, p.usedGpuMemory // (1024 * 1024)] for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)],
       'v3': [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses_v3(h)],
       'mps': [p.pid for p in pynvml.nvmlDeviceGetMPSComputeRunningProcesses(h)]}
"""
    LISTS = {"STUB_PYNVML_PROCS": "[[900, 30], [42, 5]]", "STUB_PYNVML_MPS_PROCS": "[[42, 5], [43, 1018]]"}

    def test_under_mps_the_compute_list_also_shows_the_clients(self):
        out = run_json(self, self.PROBE, {**self.LISTS, "CUDA_MPS_PIPE_DIRECTORY": "/run/gpu-cosplay/mps/pipe"})
        self.assertEqual(out["compute"], [[900, 30], [42, 5], [43, 1018]])
        self.assertEqual(out["v3"], [900, 42, 43])
        self.assertEqual(out["mps"], [42, 43])

    def test_without_mps_the_compute_list_is_untouched(self):
        out = run_json(self, self.PROBE, self.LISTS)
        self.assertEqual(out["compute"], [[900, 30], [42, 5]])


class EnvModuleTest(unittest.TestCase):
    def test_framework_env_values(self):
        sys.path.insert(0, HOOKS)
        try:
            import gpu_cosplay_env as e
        finally:
            sys.path.remove(HOOKS)
        self.assertEqual(e.framework_env(24576, 40448), [
            ("XLA_CLIENT_MEM_FRACTION", "0.6075"), ("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.6075"),
            ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), ("CUPY_GPU_MEMORY_LIMIT", str(24576 * MIB))])
        self.assertEqual(e.mem_fraction(81920, 40448), 1.0)
        self.assertIsNone(e.load({}))
        self.assertIsNone(e.load({"GPU_COSPLAY_NAME": "x"}))
        c = e.load({"GPU_COSPLAY_NAME": "NVIDIA Tesla T4", "GPU_COSPLAY_VRAM_GB": "16"})
        self.assertEqual(c.vram_mib, 16384)
        self.assertEqual(c.report_dir, "/workspace/.gpu-cosplay")
        # an older host tool: one figure for all three
        self.assertEqual([c.cuda_total_mib, c.alloc_cap_mib], [16384, 16384])
        base = {"GPU_COSPLAY_NAME": "Tesla T4", "GPU_COSPLAY_VRAM_MIB": "16384", "GPU_COSPLAY_PHYS_VRAM_MIB": "32768"}
        c = e.load(dict(base, GPU_COSPLAY_CUDA_TOTAL_MIB="15095", GPU_COSPLAY_ALLOC_CAP_MIB="14692"))
        self.assertEqual([c.cap_bytes, c.cuda_total_bytes, c.alloc_cap_bytes], [16384 * MIB, 15095 * MIB, 14692 * MIB])
        # JAX and CuPy get the allocator cap, not the card's VRAM
        self.assertEqual(dict(e.framework_env_for(c))["CUPY_GPU_MEMORY_LIMIT"], str(14692 * MIB))
        # a cap above what the card reports, or a total above its VRAM, is clamped, never trusted
        c = e.load(dict(base, GPU_COSPLAY_CUDA_TOTAL_MIB="99999", GPU_COSPLAY_ALLOC_CAP_MIB="99999"))
        self.assertEqual([c.cuda_total_mib, c.alloc_cap_mib], [16384, 16384])

    def test_cli(self):
        p = subprocess.run([sys.executable, os.path.join(HOOKS, "gpu_cosplay_env.py")],
                           stdout=subprocess.PIPE, env=clean_env(), timeout=30)
        self.assertEqual(p.stdout.decode().splitlines(), [
            "XLA_CLIENT_MEM_FRACTION=0.6075", "XLA_PYTHON_CLIENT_MEM_FRACTION=0.6075",
            "XLA_PYTHON_CLIENT_PREALLOCATE=false", "CUPY_GPU_MEMORY_LIMIT=%d" % (24576 * MIB)])
        p = subprocess.run([sys.executable, os.path.join(HOOKS, "gpu_cosplay_env.py")],
                           stdout=subprocess.PIPE, env=clean_env(contract=False), timeout=30)
        self.assertEqual(p.stdout, b"")


if __name__ == "__main__":
    unittest.main()
