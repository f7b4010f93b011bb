"""runtime-hooks/gpu_cosplay_perf.py: sizes, sample parsing, the sampler behind the shim (real values), the VRAM
probe against the stand-in torch with the hook's cap, and a real CPU run with Debian's python3-torch when it is
installed (skipped with the reason otherwise). No GPU here: the CUDA timing path is not exercised."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(ROOT, "runtime-hooks")
STUBS = os.path.join(ROOT, "test", "py", "stubs")
sys.path.insert(0, HOOKS)

import gpu_cosplay_perf as perf  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30

# A driver's nvidia-smi for the sampler: real values (700 W limit), the reasons field of the given name.
FAKE_SMI = r'''#!%(py)s
import sys
a = " ".join(sys.argv[1:])
if "--query-gpu=" not in a:
    sys.exit(0)
fields = a.split("--query-gpu=")[1].split()[0].split(",")
if "%(reject)s" and "%(reject)s" in fields:
    sys.stderr.write('Field "%(reject)s" is not a valid field to query.\n')
    sys.exit(2)
vals = {"clocks.sm": "1755", "clocks.max.sm": "1980", "clocks.gr": "1755", "clocks.max.gr": "1980",
        "power.draw": "652.31", "power.limit": "700.00", "clocks_event_reasons.active": "0x0000000000000004",
        "clocks_throttle_reasons.active": "0x0000000000000004", "temperature.gpu": "61", "driver_version": "550.90.12"}
print(", ".join(vals[f] for f in fields))
'''

CONTRACT = {"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576", "GPU_COSPLAY_TDP_W": "350"}


def torch_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py):
            try:
                if subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=120).returncode == 0:
                    return py
            except Exception:
                pass
    return None


class SizesTest(unittest.TestCase):
    def test_full_gpu_uses_the_reference_size(self):
        s = perf.plan_sizes("cuda", 80 * GIB)
        self.assertEqual(s["gemmN"], {"fp32": 8192, "bf16": 8192})
        self.assertEqual(s["copyBytes"], GIB)

    def test_sizes_shrink_with_the_cap(self):
        s = perf.plan_sizes("cuda", GIB)
        # three FP32 8192^2 matrices (768 MiB) do not fit a quarter of 1 GiB; 4096 ones (192 MiB) do
        self.assertEqual(s["gemmN"], {"fp32": 4096, "bf16": 4096})
        self.assertEqual(s["copyBytes"], 128 * MIB)
        tiny = perf.plan_sizes("cuda", 0)
        self.assertEqual(tiny["gemmN"], {"fp32": perf.GEMM_MIN_N, "bf16": perf.GEMM_MIN_N})
        self.assertEqual(tiny["copyBytes"], perf.COPY_MIN_BYTES)

    def test_cpu_is_small(self):
        s = perf.plan_sizes("cpu", 0)
        self.assertLessEqual(s["gemmN"]["fp32"], 512)
        self.assertLessEqual(s["copyBytes"], 64 * MIB)


class SamplesTest(unittest.TestCase):
    def test_parse_line_and_reasons(self):
        fields = perf.SAMPLE_FIELD_SETS[0]
        row = perf.parse_sample_line(fields, "1755, 1980, 652.31, 700.00, 0x0000000000000084, [N/A]")
        self.assertEqual(row, {"smClockMHz": 1755.0, "maxSmClockMHz": 1980.0, "powerW": 652.31, "powerLimitW": 700.0,
                               "throttleReasons": 0x84, "temperatureC": None})
        self.assertEqual(perf.decode_reasons(0x84), ["sw_power_cap", "hw_power_brake_slowdown"])
        self.assertIsNone(perf.parse_sample_line(fields, "1755, 1980"))

    def test_summary(self):
        s = perf.summarise_samples([{"smClockMHz": 1980.0, "powerW": 600.0, "throttleReasons": 0},
                                    {"smClockMHz": 1755.0, "powerW": 690.0, "throttleReasons": 4}])
        self.assertEqual(s["smClockMHz"], {"min": 1755.0, "median": 1867.5, "max": 1980.0})
        self.assertEqual(s["throttleReasons"], ["sw_power_cap"])


class SamplerBehindShimTest(unittest.TestCase):
    """In a session nvidia-smi is the costume shim; the sampler must report the GPU's real values."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.saved = dict(os.environ)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def install(self, reject=""):
        real_dir = os.path.join(self.tmp, "driver")
        os.makedirs(real_dir, exist_ok=True)
        with open(os.path.join(real_dir, "nvidia-smi"), "w") as fh:
            fh.write(FAKE_SMI % {"py": sys.executable, "reject": reject})
        os.chmod(os.path.join(real_dir, "nvidia-smi"), 0o755)
        for k in list(os.environ):
            if k.startswith("GPU_COSPLAY_"):
                del os.environ[k]
        os.environ.update(CONTRACT)
        os.environ["PATH"] = os.pathsep.join([HOOKS, real_dir, os.path.dirname(sys.executable), "/usr/bin", "/bin"])

    def sample(self):
        s = perf.Sampler(interval_s=0.05).start()
        deadline = time.monotonic() + 10
        while not s.rows and s.fields and time.monotonic() < deadline:
            time.sleep(0.05)
        return s.stop()

    def test_the_shim_rewrites_but_the_sampler_sees_the_real_limit(self):
        self.install()
        # the shim, asked plainly, shows the costume's 350 W ...
        q = subprocess.run(["nvidia-smi", "--query-gpu=power.limit", "--format=csv,noheader,nounits"],
                           stdout=subprocess.PIPE, env=dict(os.environ), timeout=30)
        self.assertEqual(q.stdout.decode().strip(), "350.00")
        # ... the sampler passes through it
        out = self.sample()
        self.assertEqual(out["source"], "nvidia-smi")
        self.assertTrue(out["realValues"])
        self.assertGreaterEqual(out["count"], 1)
        self.assertEqual(out["rows"][0]["powerLimitW"], 700.0)
        self.assertEqual(out["summary"]["throttleReasons"], ["sw_power_cap"])
        self.assertEqual(perf.driver_version(), "550.90.12")

    def test_older_driver_field_name(self):
        self.install(reject="clocks_event_reasons.active")
        out = self.sample()
        self.assertIn("clocks_throttle_reasons.active", out["fields"])
        self.assertEqual(out["rows"][0]["throttleReasons"], 4)

    def test_no_nvidia_smi(self):
        self.install()
        os.environ["PATH"] = os.path.dirname(sys.executable)
        out = self.sample()
        self.assertIsNone(out["source"])
        self.assertEqual(out["count"], 0)
        self.assertIn("no nvidia-smi", out["reason"])


# The VRAM probe against the stand-in torch (a caching-allocator model) in a fresh interpreter.
VRAM_PROBE = r'''
import json, sys, site
sys.path.insert(0, %(hooks)r)
if %(hook)r:
    site.addsitedir(%(hooks)r)
import torch, gpu_cosplay_perf as perf
torch.cuda._lazy_init()
cap = %(cap)d
print(json.dumps(perf.measure_vram_axis(torch, "cuda", cap, True)))
'''


class VramProbeTest(unittest.TestCase):
    def probe(self, hook, cap):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_")}
        env["PYTHONPATH"] = STUBS
        env.update(CONTRACT)
        code = VRAM_PROBE % {"hooks": HOOKS, "hook": hook, "cap": cap}
        p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return json.loads(p.stdout.decode())

    def test_the_hooks_cap_holds(self):
        v = self.probe(hook=True, cap=24576 * MIB)
        self.assertTrue(v["underCapOk"])
        self.assertTrue(v["overCapRefused"])
        # the largest allocation that works, to within the search step (the stand-in's limit is exactly the cap)
        self.assertLessEqual(24 - v["measured"], perf.VRAM_STEP_BYTES / GIB)
        self.assertIsNone(v["hard"])  # no libcuda here: unknown, with the reason
        self.assertIn("driver not reachable", v["hardReason"])
        self.assertFalse(v["cupy"]["installed"])

    def test_a_cap_nobody_enforces_is_caught(self):
        # no hook: the stand-in allocator only stops at the physical 40448 MiB, so 24 GiB + 1 GiB succeeds
        v = self.probe(hook=False, cap=24576 * MIB)
        self.assertTrue(v["underCapOk"])
        self.assertFalse(v["overCapRefused"])


class CpuTorchTest(unittest.TestCase):
    """The real measurement with Debian's CPU torch (apt-get install python3-torch)."""

    @classmethod
    def setUpClass(cls):
        cls.py = torch_python()
        if cls.py is None:
            raise unittest.SkipTest("no python with torch here (apt-get install -y python3-torch to run these)")

    def run_perf(self, *args, script="gpu_cosplay_perf.py"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_")}
        env["PATH"] = "/usr/bin:/bin"  # no nvidia-smi
        return subprocess.run([self.py, os.path.join(HOOKS, script)] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, timeout=300)

    def test_cpu_run_is_labelled_and_measures_every_throughput_axis(self):
        p = self.run_perf("--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = json.loads(p.stdout.decode())
        self.assertEqual(out["schema"], 1)
        self.assertEqual(out["device"]["kind"], "cpu")
        self.assertIsNone(out["device"]["driver"])
        self.assertEqual(sorted(out["axes"]), ["bandwidth", "bf16", "fp32", "vram"])
        for axis, unit in (("fp32", "TFLOPS"), ("bf16", "TFLOPS"), ("bandwidth", "GB/s")):
            self.assertEqual(out["axes"][axis]["unit"], unit)
            self.assertGreater(out["axes"][axis]["measured"], 0, (axis, out["axes"][axis]))
        self.assertIsNone(out["axes"]["vram"]["measured"])
        self.assertIn("CPU", out["axes"]["vram"]["skipped"])
        self.assertIn("no nvidia-smi", out["samples"]["reason"])

    def test_verify_perf_runs_the_same_measurement(self):
        p = self.run_perf("--perf", "--no-samples", script="verify.py")
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(json.loads(p.stdout.decode())["device"]["kind"], "cpu")

    def test_asking_for_cuda_without_one_is_refused(self):
        p = self.run_perf("--device", "cuda", "--no-samples")
        self.assertEqual(p.returncode, 3)
        self.assertEqual(json.loads(p.stdout.decode())["error"]["code"], "NO_CUDA")

    def test_tf32_policy_is_restored(self):
        code = ("import sys; sys.path.insert(0, %r); import torch, gpu_cosplay_perf as perf\n"
                "torch.backends.cuda.matmul.allow_tf32 = True\n"
                "with perf.MatmulPolicy(torch):\n"
                "    inside = torch.backends.cuda.matmul.allow_tf32\n"
                "print(inside, torch.backends.cuda.matmul.allow_tf32)" % HOOKS)
        p = subprocess.run([self.py, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.stdout.decode().split(), ["False", "True"], p.stderr.decode())


class NoTorchTest(unittest.TestCase):
    def test_refused_with_a_code(self):
        # a torch that cannot be imported, first on the path
        tmp = tempfile.mkdtemp()
        try:
            os.makedirs(os.path.join(tmp, "torch"))
            with open(os.path.join(tmp, "torch", "__init__.py"), "w") as fh:
                fh.write("raise ImportError('no torch in this test')\n")
            env = dict(os.environ, PYTHONPATH=tmp)
            p = subprocess.run([sys.executable, os.path.join(HOOKS, "gpu_cosplay_perf.py")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, timeout=60)
            self.assertEqual(p.returncode, 3)
            self.assertEqual(json.loads(p.stdout.decode())["error"]["code"], "NO_TORCH")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
