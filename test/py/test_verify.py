"""runtime-hooks/verify.py against the stand-in torch / pynvml and a fake driver nvidia-smi behind the shim."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(ROOT, "runtime-hooks")
STUBS = os.path.join(ROOT, "test", "py", "stubs")

FAKE = r'''#!%(py)s
import sys
a = sys.argv[1:]
if "-L" in a:
    print("GPU 0: NVIDIA H200 (UUID: GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732)")
    print("  MIG 3g.71gb     Device  0: (UUID: MIG-1b8509c0-e60d-502d-8263-d434867998aa)")
elif any(x.startswith("--query-gpu") for x in a):
    print("NVIDIA H200, 143771")
'''

CONTRACT = {"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576",
            "GPU_COSPLAY_VRAM_GB": "24", "GPU_COSPLAY_PHYS_VRAM_MIB": "40448", "GPU_COSPLAY_TDP_W": "350",
            "GPU_COSPLAY_HAS_BF16": "1", "GPU_COSPLAY_HAS_TF32": "0",
            "XLA_CLIENT_MEM_FRACTION": "0.6075", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.6075",
            "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "CUPY_GPU_MEMORY_LIMIT": str(24576 * 1024 * 1024)}


class VerifyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.tmp, "bin"))
        real = os.path.join(self.tmp, "bin", "nvidia-smi")
        with open(real, "w") as fh:
            fh.write(FAKE % {"py": sys.executable})
        os.chmod(real, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_verify(self, extra=None, contract=True, args=()):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_")}
        env["PATH"] = os.pathsep.join([HOOKS, os.path.join(self.tmp, "bin"), os.path.dirname(sys.executable),
                                       "/usr/bin", "/bin"])
        env["PYTHONPATH"] = STUBS
        if contract:
            env.update(CONTRACT)
        env["GPU_COSPLAY_UID"] = str(os.getuid())
        env.update(extra or {})
        code = ("import site, sys, runpy; site.addsitedir(%r); sys.argv = ['verify.py'] + %r; "
                "runpy.run_path(%r, run_name='__main__')" % (HOOKS, list(args), os.path.join(HOOKS, "verify.py")))
        return subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)

    def statuses(self, p):
        data = json.loads(p.stdout.decode())
        return {c["name"]: c["status"] for c in data["checks"]}, data

    def test_all_checks(self):
        p = self.run_verify()
        st, data = self.statuses(p)
        expected = {"env": "PASS", "shim.shadows": "PASS", "shim.output": "PASS", "hook.loaded": "PASS",
                    "torch.policy": "PASS", "torch.name": "PASS", "torch.properties": "PASS",
                    "torch.mem_get_info": "PASS", "torch.alloc_under_cap": "PASS", "torch.alloc_over_cap": "PASS",
                    "pynvml.name": "PASS", "pynvml.memory": "PASS", "jax_cupy.env": "PASS"}
        for k, v in expected.items():
            self.assertEqual(st.get(k), v, (k, data))
        root = os.getuid() == 0
        self.assertEqual(st["user"], "FAIL" if root else "PASS")
        self.assertEqual(p.returncode, 1 if root else 0)
        self.assertEqual(data["summary"]["FAIL"], 1 if root else 0)

    def test_no_cuda_skips_and_wrong_env_fails(self):
        p = self.run_verify({"STUB_TORCH_CUDA": "0", "CUPY_GPU_MEMORY_LIMIT": "1"})
        st, data = self.statuses(p)
        self.assertEqual(st["torch.name"], "SKIP")
        self.assertEqual(st["torch.alloc_over_cap"], "SKIP")
        self.assertEqual(st["jax_cupy.env"], "FAIL")
        self.assertEqual(p.returncode, 1)

    def test_no_contract_fails_and_text_mode(self):
        p = self.run_verify(contract=False, args=["--text"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("FAIL  env", p.stdout.decode())
        self.assertIn("failed", p.stdout.decode())


if __name__ == "__main__":
    unittest.main()
