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


RANKS_PROBE = """
import site, sys, json, threading
site.addsitedir(%r)
import os, torch
st = sys.modules['gpu_cosplay_hook'].state()
out = {'rank': st.ranks.rank, 'cvd': os.environ.get('CUDA_VISIBLE_DEVICES'), 'errors': st.errors,
       'cuda': torch.cuda.is_available(), 'count': torch.cuda.device_count()}
m = torch.nn.Linear(4, 2).to('cpu').to(torch.float64).to(device=torch.device('cpu'))
out['forward'] = list(m(torch.ones(3, 4, dtype=torch.float64)).shape)
out['factories'] = [str(torch.zeros(2, device='cpu').device), str(torch.randn(2).device), str(torch.arange(3).device),
                    str(torch.full((2,), 1.0, device=torch.device('cpu')).device)]
@torch.jit.script
def scripted(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros(3, device=x.device) + torch.ones(3).to(x.device)
out['scripted'] = scripted(torch.ones(3)).tolist()
# DDP's device_ids go through torch._utils._get_device_index, bound by name in torch.nn.parallel
import torch.nn.parallel.distributed as ddp
out['ddp_ids'] = [ddp._get_device_index(1, True), ddp._get_device_index(torch.device('cuda', 1), True)]
def refused(box):
    try:
        torch.zeros(1, device='cuda:0')
        box.append('ok')
    except Exception as e:
        box.append([type(e).__name__, isinstance(e, RuntimeError), str(e)])
main, other = [], []
refused(main)
t = threading.Thread(target=refused, args=(other,))
t.start(); t.join()
out['cuda0'] = main[0]
out['cuda0_in_a_thread'] = other[0]
print('@@' + json.dumps(out))
"""


@unittest.skipIf(PY is None, "no python with torch here (apt-get install python3-torch)")
class RealTorchRanksTest(unittest.TestCase):
    """Two ranks, this process rank 1 (LOCAL_RANK): the wrapped entry points leave a real torch working, TorchScript
    included, and refuse rank 0's device in every thread. On a CPU build CUDA's own answers stay (no devices)."""

    def test_two_ranks_leave_torch_working_and_refuse_another_ranks_device(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_")}
        env.pop("PYTHONPATH", None)
        env.update({"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576", "LOCAL_RANK": "1",
                    "GPU_COSPLAY_REPORT_DIR": tempfile.mkdtemp(),
                    "GPU_COSPLAY_RANKS": json.dumps([{"uuid": "MIG-a", "mpsPipe": None}, {"uuid": "MIG-b", "mpsPipe": None}])})
        script = os.path.join(env["GPU_COSPLAY_REPORT_DIR"], "probe.py")  # TorchScript reads the function's source
        with open(script, "w") as f:
            f.write(RANKS_PROBE % HOOKS)
        p = subprocess.run([PY, script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = json.loads([l for l in p.stdout.decode().splitlines() if l.startswith("@@")][-1][2:])
        self.assertEqual([out["rank"], out["cvd"], out["errors"]], [1, "MIG-b", []])
        if not out["cuda"]:
            self.assertEqual(out["count"], 0)  # a CPU build keeps its own answer
        else:
            self.assertEqual(out["count"], 2)
        self.assertEqual(out["forward"], [3, 2])
        self.assertEqual(out["factories"], ["cpu"] * 4)
        self.assertEqual(out["scripted"], [2.0, 2.0, 2.0])
        self.assertEqual(out["ddp_ids"], [0, 0])
        for key in ("cuda0", "cuda0_in_a_thread"):
            name, is_runtime_error, message = out[key]
            self.assertEqual([name, is_runtime_error], ["OtherRanksDevice", True], key)
            self.assertIn("cuda:0 is rank 0's device; this process is rank 1", message)


if __name__ == "__main__":
    unittest.main()
