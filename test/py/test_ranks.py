"""up --count N: the costume narrows each rank's process to its own device before CUDA starts, and maps the ordinals a
script names onto it; run against the stand-in torch (test/py/stubs), which records what CUDA saw when it started."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_hook import CONTRACT, HOOKS, MIB, STUBS, run_json, run_py  # noqa: E402

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


def attempt(expr):
    """Code for run_json: `_r` is 'ok' or [the error's class name, its message] of `expr`."""
    return "try:\n    %s\n    _r = 'ok'\nexcept Exception as e:\n    _r = [type(e).__name__, str(e)]\n" % expr


PROBE_AT_START = """
import os
out = {'cvd_before_torch': os.environ.get('CUDA_VISIBLE_DEVICES'), 'pipe_before_torch': os.environ.get('CUDA_MPS_PIPE_DIRECTORY')}
import torch
"""


class TorchrunMappingTest(unittest.TestCase):
    """LOCAL_RANK=1, as torchrun starts rank 1: the script's ordinal 1 is the process's real device 0 everywhere a
    device reaches torch, and rank 0's device is refused."""

    def test_every_entry_point_maps_rank_1_onto_the_one_device(self):
        code = PROBE_AT_START + """
out['count_before_init'] = torch.cuda.device_count()
out['available_before_init'] = torch.cuda.is_available()
out['initialised_by_count'] = torch.cuda.is_initialized()
torch.cuda.set_device(1)
out['init_env'] = dict(torch.cuda.init_env)
out['real_current'] = torch.cuda._current
out['current_device'] = torch.cuda.current_device()
out['names'] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
out['props_total'] = [torch.cuda.get_device_properties(i).total_memory for i in range(2)]
out['mem_total'] = [torch.cuda.mem_get_info(i)[1] for i in range(2)]
out['fraction_calls'] = [c for c in torch.cuda.calls if c[0] == 'set_per_process_memory_fraction']
out['zeros'] = str(torch.zeros(3, device='cuda:1').device)
out['to'] = str(torch.zeros(3).to('cuda:1').device)
out['to_kw'] = str(torch.zeros(3).to(device='cuda:1').device)
out['to_device_obj'] = str(torch.zeros(3).to(torch.device('cuda', 1)).device)
out['cuda_int'] = str(torch.zeros(3).cuda(1).device)
x = torch.zeros(3, device='cuda:1')
out['like_tensor_device'] = str(torch.zeros(3, device=x.device).device)  # torch's real cuda:0 is accepted
out['like_get_device'] = str(torch.zeros(3).cuda(x.get_device()).device)
with torch.cuda.device(1):
    out['in_ctx'] = torch.cuda.current_device()
torch.cuda.manual_seed_all(7)
torch.cuda.manual_seed(8)
out['seeded'] = [g.seed for g in torch.cuda.default_generators]
""" + attempt("torch.cuda.set_device(0)") + "out['set_device_0'] = _r\n" \
            + attempt("torch.zeros(3, device='cuda:0')") + "out['zeros_cuda0'] = _r\n" \
            + attempt("torch.zeros(3).to('cuda:0')") + "out['to_cuda0'] = _r\n" \
            + attempt("torch.zeros(3, device='cuda:2')") + "out['zeros_cuda2'] = _r\n"
        out = run_json(self, code, dict(SESSION, LOCAL_RANK="1"))
        # narrowed at interpreter start, before torch was imported
        self.assertEqual([out["cvd_before_torch"], out["pipe_before_torch"]], [RANKS[1]["uuid"], RANKS[1]["mpsPipe"]])
        # the session's count without starting CUDA
        self.assertEqual([out["count_before_init"], out["available_before_init"], out["initialised_by_count"]], [2, True, False])
        self.assertEqual(out["init_env"], {"CUDA_VISIBLE_DEVICES": RANKS[1]["uuid"], "CUDA_MPS_PIPE_DIRECTORY": RANKS[1]["mpsPipe"]})
        self.assertEqual([out["real_current"], out["current_device"]], [0, 1])
        self.assertEqual(out["names"], ["NVIDIA GeForce RTX 3090"] * 2)
        self.assertEqual(out["props_total"], [24576 * MIB] * 2)
        self.assertEqual(out["mem_total"], [24576 * MIB] * 2)
        # the allocator cap went to the one real device, once
        self.assertEqual([(c[2], round(c[1], 9)) for c in out["fraction_calls"]], [(0, round(24576 / 40448.0, 9))])
        self.assertEqual([out[k] for k in ("zeros", "to", "to_kw", "to_device_obj", "cuda_int", "like_tensor_device", "like_get_device")],
                         ["cuda:0"] * 7)
        self.assertEqual(out["in_ctx"], 1)
        self.assertEqual(out["seeded"], [8, 8])  # one real generator, reached by ordinals 0 and 1
        for key in ("set_device_0", "zeros_cuda0", "to_cuda0"):
            self.assertEqual(out[key][0], "OtherRanksDevice", key)
            self.assertIn("cuda:0 is rank 0's device; this process is rank 1 (cuda:1, chosen by LOCAL_RANK)", out[key][1])
            self.assertIn("start one process per device", out[key][1])
        self.assertEqual(out["zeros_cuda2"][0], "OtherRanksDevice")
        self.assertIn("this session has 2 devices", out["zeros_cuda2"][1])

    def test_a_thread_the_program_starts_is_mapped_too(self):
        out = run_json(self, """
import threading, torch
seen = {}
def work():
    try:
        seen['zeros'] = str(torch.zeros(2, device='cuda:1').device)
        seen['to'] = str(torch.zeros(2).to('cuda:1').device)
    except Exception as e:
        seen['error'] = repr(e)
t = threading.Thread(target=work)
t.start(); t.join()
out = seen
""", dict(SESSION, LOCAL_RANK="1"))
        self.assertEqual(out, {"zeros": "cuda:0", "to": "cuda:0"})

    def test_torch_1_13s_device_context_sets_the_real_index(self):
        # torch 1.13's torch.cuda.device reads current_device() and calls set_device() with the index the funnel mapped
        out = run_json(self, """
import torch
with torch.cuda.device(1):
    inside = torch.cuda.current_device()
    x = torch.zeros(1, device='cuda:1')
out = {'inside': inside, 'after': torch.cuda.current_device(), 'sets': [c for c in torch.cuda.calls if c[0] == 'set_device'],
       'device_obj': isinstance(torch.cuda.device(torch.device('cuda', 1)), torch.cuda.device)}
""", dict(SESSION, LOCAL_RANK="1", STUB_TORCH_DEVICE_CONTEXT="1.13"))
        self.assertEqual(out, {"inside": 1, "after": 1, "sets": [], "device_obj": True})
        out = run_json(self, """
import torch
torch.cuda.set_device(1)
with torch.cuda.device(torch.device('cuda', 1)):
    pass
out = {'sets': [c for c in torch.cuda.calls if c[0] == 'set_device'], 'current': torch.cuda.current_device()}
""", dict(SESSION, STUB_TORCH_DEVICE_CONTEXT="1.13"))
        self.assertEqual(out, {"sets": [["set_device", 0]], "current": 1})

    def test_a_local_rank_outside_the_session_is_noted_and_rank_0_used(self):
        out = run_json(self, "import torch, gpu_cosplay_hook as h\ntorch.zeros(1, device='cuda')\n"
                       "out = {'env': dict(torch.cuda.init_env), 'errors': h.state().errors}", dict(SESSION, LOCAL_RANK="5"))
        self.assertEqual(out["env"]["CUDA_VISIBLE_DEVICES"], RANKS[0]["uuid"])
        self.assertTrue(any("LOCAL_RANK=5" in e for e in out["errors"]), out["errors"])

    def test_through_sitecustomize_with_the_hooks_folder_off_sys_path(self):
        # site/sitecustomize.py takes runtime-hooks off sys.path again after loading the hook: the mapping must be
        # importable when torch is imported later
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_") and not k.startswith("STUB_")}
        env.update(CONTRACT)
        env.update(SESSION, LOCAL_RANK="1", PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=os.pathsep.join([os.path.join(HOOKS, "site"), STUBS]))
        code = ("import json, sys, torch, gpu_cosplay_hook as h\n"
                "print('@@' + json.dumps({'on_path': %r in sys.path, 'device': str(torch.zeros(1, device='cuda:1').device),"
                " 'errors': h.state().errors}))" % HOOKS)
        p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = json.loads([l for l in p.stdout.decode().splitlines() if l.startswith("@@")][-1][2:])
        self.assertEqual(out, {"on_path": False, "device": "cuda:0", "errors": []})


class SpawnMappingTest(unittest.TestCase):
    """No LOCAL_RANK (torch.multiprocessing.spawn): the first device the program names before CUDA starts picks the
    rank; asking how many devices there are, or whether CUDA works, must not start the driver first."""

    def check_first_naming(self, first, uuid, current, extra=None):
        env = dict(SESSION, **(extra or {}))
        out = run_json(self, PROBE_AT_START + first + "\nout['env'] = dict(torch.cuda.init_env)\n"
                       "out['current'] = torch.cuda.current_device()\n"
                       "import gpu_cosplay_hook as h\nout['how'] = h.state().ranks.how\n", env)
        # the container's (or the parent's), until it names one
        self.assertEqual(out["cvd_before_torch"], env["CUDA_VISIBLE_DEVICES"])
        self.assertEqual(out["env"]["CUDA_VISIBLE_DEVICES"], uuid)
        self.assertEqual(out["current"], current)
        return out

    def test_count_and_availability_first_then_set_device(self):
        out = self.check_first_naming("out['n'] = torch.cuda.device_count()\nout['ok'] = torch.cuda.is_available()\n"
                                      "torch.cuda.set_device(1)", RANKS[1]["uuid"], 1)
        self.assertEqual([out["n"], out["ok"], out["how"]], [2, True, "named"])
        self.assertEqual(out["env"]["CUDA_MPS_PIPE_DIRECTORY"], RANKS[1]["mpsPipe"])

    def test_a_device_string_first(self):
        self.check_first_naming("torch.zeros(2, device='cuda:1')", RANKS[1]["uuid"], 1)

    def test_tensor_to_a_device_object_first(self):
        self.check_first_naming("torch.zeros(2).to(torch.device('cuda', 1))", RANKS[1]["uuid"], 1)

    def test_queries_do_not_pick_and_nothing_named_is_rank_0(self):
        out = self.check_first_naming("out['names'] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]\n"
                                      "out['free'] = [torch.cuda.mem_get_info(i)[1] for i in range(2)]\n"
                                      "torch.zeros(2, device='cuda')", RANKS[0]["uuid"], 0)
        self.assertEqual(out["names"], ["NVIDIA GeForce RTX 3090"] * 2)
        self.assertEqual(out["free"], [24576 * MIB] * 2)
        self.assertEqual(out["how"], "default")

    def test_a_parents_rank_is_inherited_unless_the_child_names_its_own(self):
        inherited = dict(GPU_COSPLAY_RANK="1", CUDA_VISIBLE_DEVICES=RANKS[1]["uuid"])
        out = run_json(self, PROBE_AT_START + "torch.zeros(1, device='cuda')\nout['env'] = dict(torch.cuda.init_env)",
                       dict(SESSION, **inherited))
        self.assertEqual([out["cvd_before_torch"], out["env"]["CUDA_VISIBLE_DEVICES"]], [RANKS[1]["uuid"]] * 2)
        # mp.spawn's workers inherit the parent's rank when it touched CUDA (0 by default), and name their own
        self.check_first_naming("torch.cuda.set_device(1)", RANKS[1]["uuid"], 1,
                                dict(GPU_COSPLAY_RANK="0", CUDA_VISIBLE_DEVICES=RANKS[0]["uuid"]))

    def test_once_cuda_started_another_rank_is_refused(self):
        out = run_json(self, "import torch\ntorch.zeros(1, device='cuda')\n" + attempt("torch.cuda.set_device(1)")
                       + "out = {'r': _r, 'env': dict(torch.cuda.init_env)}", SESSION)
        self.assertEqual(out["r"][0], "OtherRanksDevice")
        self.assertIn("cuda:1 is rank 1's device; this process is rank 0 (cuda:0, chosen by default", out["r"][1])
        self.assertEqual(out["env"]["CUDA_VISIBLE_DEVICES"], RANKS[0]["uuid"])


class TorchScriptBuiltinsTest(unittest.TestCase):
    """TorchScript finds torch.zeros & co. by identity in a table torch builds once: a wrapper gets its original's op,
    in the table when it is built already (torch 1.13 builds it at import, test_hook_real_torch runs that), else in the
    list the table is built from."""

    def test_a_table_not_built_yet_gets_the_wrappers_in_its_list(self):
        sys.path.insert(0, HOOKS)
        import types
        import gpu_cosplay_ranks_torch as m
        fake = types.ModuleType("torch.jit._builtins")
        fake._builtin_table, fake._builtin_ops = None, []
        orig, new = object(), object()
        sys.modules["torch.jit._builtins"] = fake
        try:
            m._keep_torchscript_builtins([("zeros", orig, new)])
            self.assertEqual(fake._builtin_ops, [(new, "aten::zeros")])
            fake._builtin_table = {id(orig): "aten::zeros"}
            m._keep_torchscript_builtins([("zeros", orig, new)])
            self.assertEqual(fake._builtin_table, {id(orig): "aten::zeros", id(new): "aten::zeros"})
        finally:
            del sys.modules["torch.jit._builtins"]


class RanksNcclTest(unittest.TestCase):
    PROBE = "import os, torch\nout = {'v': os.environ.get('NCCL_MULTI_RANK_GPU_ENABLE')}"

    def test_set_where_torchs_nccl_runs_several_ranks_on_one_gpu(self):
        self.assertEqual(run_json(self, self.PROBE, dict(SESSION, STUB_TORCH_NCCL="2.30.1"))["v"], "1")
        self.assertIsNone(run_json(self, self.PROBE, dict(SESSION, STUB_TORCH_NCCL="2.21.5"))["v"])
        self.assertIsNone(run_json(self, self.PROBE, SESSION)["v"])  # no NCCL in this torch
        self.assertEqual(run_json(self, self.PROBE, dict(SESSION, STUB_TORCH_NCCL="2.30.1", NCCL_MULTI_RANK_GPU_ENABLE="0"))["v"], "0")
        self.assertIsNone(run_json(self, self.PROBE, dict(SESSION, STUB_TORCH_NCCL="2.30.1", GPU_COSPLAY_RANKS=json.dumps(RANKS[:1])))["v"])


class PynvmlRanksTest(unittest.TestCase):
    PROBE = """
import pynvml
pynvml.nvmlInit()
out = {'count': pynvml.nvmlDeviceGetCount()}
hs = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(out['count'])]
out['handles'] = [list(h) for h in hs]
out['names'] = [pynvml.nvmlDeviceGetName(h) for h in hs]
out['names'] = [n.decode() if isinstance(n, bytes) else n for n in out['names']]
out['totals'] = [pynvml.nvmlDeviceGetMemoryInfo(h).total for h in hs]
"""
    UUIDS = ",".join(r["uuid"] for r in RANKS)

    def test_the_count_is_the_sessions_and_index_i_is_rank_is_device(self):
        out = run_json(self, self.PROBE, dict(SESSION, STUB_PYNVML_UUIDS=self.UUIDS))
        self.assertEqual(out["count"], 2)
        self.assertEqual(out["handles"], [["uuid", RANKS[0]["uuid"]], ["uuid", RANKS[1]["uuid"]]])
        self.assertEqual(out["names"], ["NVIDIA GeForce RTX 3090"] * 2)
        self.assertEqual(out["totals"], [24576 * MIB] * 2)
        # an nvidia-ml-py that takes bytes only
        out = run_json(self, self.PROBE, dict(SESSION, STUB_PYNVML_UUIDS=self.UUIDS, STUB_PYNVML_BYTES="1"))
        self.assertEqual(out["handles"], [["uuid", RANKS[0]["uuid"]], ["uuid", RANKS[1]["uuid"]]])
        # an NVML that does not know the uuids: the parent GPU stands in
        out = run_json(self, self.PROBE, SESSION)
        self.assertEqual(out["handles"], [["handle", 0], ["handle", 0]])

    def test_without_ranks_the_count_is_nvmls(self):
        out = run_json(self, self.PROBE, {"STUB_PYNVML_UUIDS": RANKS[0]["uuid"]})
        self.assertEqual([out["count"], out["handles"]], [1, [["handle", 0]]])


class BenchRanksTest(unittest.TestCase):
    """runtime-hooks/bench_ranks.py (npm run bench) runs with the mapping on and times every op it lists; no timing
    is asserted."""

    def test_it_runs_with_the_mapping_active(self):
        p = subprocess.run([sys.executable, os.path.join(HOOKS, "bench_ranks.py"), "--stub", STUBS, "--loops", "3"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode() + p.stdout.decode())
        stub = json.loads(p.stdout)["stub"]
        self.assertEqual([stub["mappingActive"], stub["errors"]], [True, []])
        self.assertEqual(len(stub["rows"]), 8)
        self.assertTrue(all(isinstance(r["mappingAddsNs"], float) for r in stub["rows"]), stub["rows"])


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
