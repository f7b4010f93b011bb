"""up --count N: the costume narrows each rank's process to its own device before CUDA starts, and maps the ordinals a
script names onto it; run against the stand-in torch (test/py/stubs), which records what CUDA saw when it started."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_hook import CONTRACT, run_json, run_py  # noqa: E402

RANKS = [{"uuid": "MIG-aaaaaaaa-0000-5000-8000-000000000000", "mpsPipe": "/run/gpu-cosplay/mps/rank-0/pipe"},
         {"uuid": "MIG-bbbbbbbb-0000-5000-8000-000000000000", "mpsPipe": "/run/gpu-cosplay/mps/rank-1/pipe"}]
SESSION = {"GPU_COSPLAY_RANKS": json.dumps(RANKS), "CUDA_VISIBLE_DEVICES": ",".join(r["uuid"] for r in RANKS),
           "CUDA_MPS_PIPE_DIRECTORY": RANKS[0]["mpsPipe"]}

SEEN = """
import os, torch
import gpu_cosplay_hook as h
def seen():
    return {"visible": torch.cuda.init_env.get("CUDA_VISIBLE_DEVICES"), "pipe": torch.cuda.init_env.get("CUDA_MPS_PIPE_DIRECTORY"),
            "rank": os.environ.get("GPU_COSPLAY_RANK"), "costume": h.state().ranks.describe() if h.state().ranks else None}
"""


class RanksTest(unittest.TestCase):
    def test_a_launchers_rank_is_narrowed_before_cuda_starts(self):
        out = run_json(self, SEEN + """
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
x = torch.empty(16, device="cuda:1")
out = dict(seen(), count=torch.cuda.device_count(), current=torch.cuda.current_device(),
           name=torch.cuda.get_device_name(1), total=torch.cuda.get_device_properties(1).total_memory,
           set_calls=[c for c in torch.cuda.calls if c[0] == "set_device"])
""", dict(SESSION, LOCAL_RANK="1"))
        self.assertEqual(out["visible"], RANKS[1]["uuid"])
        self.assertEqual(out["pipe"], RANKS[1]["mpsPipe"])
        self.assertEqual(out["rank"], "1")
        self.assertEqual(out["costume"], {"count": 2, "rank": 1, "uuid": RANKS[1]["uuid"], "mpsPipe": RANKS[1]["mpsPipe"]})
        self.assertEqual(out["count"], 2)
        self.assertEqual(out["current"], 1)
        self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
        # rank 1's device, named by its session ordinal, wears the costume: what the card reports to CUDA
        cuda_total_mib = int(CONTRACT.get("GPU_COSPLAY_CUDA_TOTAL_MIB") or CONTRACT.get("GPU_COSPLAY_VRAM_MIB") or 24 * 1024)
        self.assertEqual(out["total"], cuda_total_mib * 1024 * 1024)
        # the script's cuda:1 is the process's cuda:0
        self.assertEqual(out["set_calls"], [["set_device", 0]])

    def test_mp_spawn_style_the_first_device_named_chooses_the_rank(self):
        out = run_json(self, SEEN + """
torch.cuda.set_device(1)
out = seen()
""", SESSION)
        self.assertEqual((out["visible"], out["pipe"], out["rank"]), (RANKS[1]["uuid"], RANKS[1]["mpsPipe"], "1"))

    def test_with_torch_cuda_device_too(self):
        out = run_json(self, SEEN + """
with torch.cuda.device(1):
    pass
out = dict(seen(), isclass=isinstance(torch.cuda.device(1), torch.cuda.device))
""", SESSION)
        self.assertEqual(out["visible"], RANKS[1]["uuid"])
        self.assertTrue(out["isclass"])

    def test_cuda_starting_with_no_rank_named_takes_rank_0(self):
        out = run_json(self, SEEN + """
torch.cuda.mem_get_info()
out = seen()
""", SESSION)
        self.assertEqual((out["visible"], out["pipe"], out["rank"]), (RANKS[0]["uuid"], RANKS[0]["mpsPipe"], "0"))

    def test_another_ranks_device_is_refused_with_what_to_do(self):
        p = run_py(SEEN + """
torch.cuda.set_device(0)
torch.cuda.set_device(1)
""", dict(SESSION, LOCAL_RANK="0"))
        self.assertNotEqual(p.returncode, 0)
        err = p.stderr.decode()
        self.assertIn("cuda:1 is rank 1's device; this process is rank 0", err)
        self.assertIn("torchrun", err)

    def test_a_child_stays_on_its_parents_device(self):
        out = run_json(self, """
import os, subprocess, sys, json, torch
torch.cuda.set_device(1)
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'], os.environ['GPU_COSPLAY_RANK'])"],
                       capture_output=True, text=True)
out = {"child": child.stdout.split()}
""", SESSION)
        self.assertEqual(out["child"], [RANKS[1]["uuid"], "1"])

    def test_one_device_or_none_changes_nothing(self):
        for extra in ({}, {"GPU_COSPLAY_RANKS": json.dumps(RANKS[:1])}):
            out = run_json(self, """
import os, torch
torch.cuda.set_device(0)
out = {"count": torch.cuda.device_count(), "visible": torch.cuda.init_env.get("CUDA_VISIBLE_DEVICES"), "rank": os.environ.get("GPU_COSPLAY_RANK")}
""", dict(extra, CUDA_VISIBLE_DEVICES="MIG-one"))
            self.assertEqual(out, {"count": 1, "visible": "MIG-one", "rank": None})

    def test_a_malformed_list_is_noted_and_leaves_one_device(self):
        out = run_json(self, """
import torch, gpu_cosplay_hook as h
torch.cuda.set_device(0)
out = {"count": torch.cuda.device_count(), "errors": h.state().errors}
""", {"GPU_COSPLAY_RANKS": '[{"uuid": 5}]', "CUDA_VISIBLE_DEVICES": "MIG-one"})
        self.assertEqual(out["count"], 1)
        self.assertTrue(any("GPU_COSPLAY_RANKS" in e for e in out["errors"]), out["errors"])

    def test_without_cuda_torch_keeps_its_answers_and_the_choice_is_still_made(self):
        out = run_json(self, SEEN + """
try:
    torch.cuda.set_device(1)
    raised = None
except AssertionError as exc:
    raised = str(exc)
out = dict(seen(), count=torch.cuda.device_count(), raised=raised)
""", dict(SESSION, STUB_TORCH_CUDA="0"))
        self.assertEqual(out["count"], 0)
        self.assertIn("not compiled with CUDA", out["raised"])
        self.assertEqual(out["rank"], "1")
        self.assertEqual(out["costume"]["uuid"], RANKS[1]["uuid"])


class NcclEnvTest(unittest.TestCase):
    def test_only_from_230_and_never_over_the_users_value(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "runtime-hooks"))
        import gpu_cosplay_ranks as r
        self.assertEqual(r.nccl_env((2, 21, 5), {}), {})
        self.assertEqual(r.nccl_env(None, {}), {})
        env = {}
        self.assertEqual(r.nccl_env((2, 30, 0), env), {"NCCL_MULTI_RANK_GPU_ENABLE": "1"})
        self.assertEqual(env, {"NCCL_MULTI_RANK_GPU_ENABLE": "1"})
        mine = {"NCCL_MULTI_RANK_GPU_ENABLE": "0"}
        self.assertEqual(r.nccl_env((2, 32, 0), mine), {})
        self.assertEqual(mine, {"NCCL_MULTI_RANK_GPU_ENABLE": "0"})


if __name__ == "__main__":
    unittest.main()
