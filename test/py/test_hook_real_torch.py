"""The hook with the real torch (CPU-only, e.g. Debian's python3-torch). Skipped when no torch is found."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(ROOT, "runtime-hooks")


def torch_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py):
            try:
                if subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=60).returncode == 0:
                    return py
            except Exception:
                pass
    return None


PY = torch_python()

PROBE = """
import site, sys, json
site.addsitedir(%r)
import torch
out = {'hook': 'gpu_cosplay_hook' in sys.modules, 'version': torch.__version__}
st = sys.modules['gpu_cosplay_hook'].state()
out['patched'] = bool(st and st.torch_patched)
out['errors'] = st.errors if st else None
out['cuda'] = torch.cuda.is_available()
out['bf16'] = torch.cuda.is_bf16_supported() if torch.cuda.is_available() else None
out['tf32'] = [torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32]
out['math'] = float((torch.ones(3) * 2).sum())
if torch.cuda.is_available():
    out['name'] = torch.cuda.get_device_name(0)
    out['total'] = torch.cuda.get_device_properties(0).total_memory
print('@@' + json.dumps(out))
"""


@unittest.skipIf(PY is None, "no python with torch here (apt-get install python3-torch)")
class RealTorchTest(unittest.TestCase):
    def run_probe(self, contract):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_")}
        env.pop("PYTHONPATH", None)
        env["GPU_COSPLAY_REPORT_DIR"] = tempfile.mkdtemp()
        if contract:
            env.update({"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576",
                        "GPU_COSPLAY_HAS_BF16": "1", "GPU_COSPLAY_HAS_TF32": "0", "GPU_COSPLAY_TDP_W": "350"})
        p = subprocess.run([PY, "-c", PROBE % HOOKS], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        line = [l for l in p.stdout.decode().splitlines() if l.startswith("@@")][-1]
        return json.loads(line[2:]), env["GPU_COSPLAY_REPORT_DIR"]

    def test_import_torch_with_hook(self):
        out, report_dir = self.run_probe(True)
        self.assertTrue(out["hook"])
        self.assertTrue(out["patched"])
        self.assertEqual(out["errors"], [])
        self.assertEqual(out["math"], 6.0)
        self.assertEqual(out["tf32"], [False, False])
        if out["cuda"]:
            self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
            self.assertEqual(out["total"], 24576 * 1024 * 1024)
        else:  # CPU-only torch: no CUDA used, so no fit line
            self.assertFalse(os.path.exists(os.path.join(report_dir, "fit.jsonl")))

    def test_without_contract_torch_is_untouched(self):
        out, _ = self.run_probe(False)
        self.assertFalse(out["patched"])
        self.assertEqual(out["math"], 6.0)


if __name__ == "__main__":
    unittest.main()
