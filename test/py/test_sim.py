"""Tests for the nvidia-smi simulator in test/sim/nvidia-smi.

Run from the repo root: python3 -m unittest discover -s test/py -t . -p 'test_*.py'
Layouts are checked against the real captures (test/fixtures/nvidia-smi, else /work/shared/fixtures/nvidia-smi).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM = os.path.join(ROOT, "test", "sim", "nvidia-smi")
FIXTURE_DIRS = [os.path.join(ROOT, "test", "fixtures", "nvidia-smi"), "/work/shared/fixtures/nvidia-smi"]


def fixture(name):
    for d in FIXTURE_DIRS:
        p = os.path.join(d, name)
        if os.path.exists(p):
            with open(p) as f:
                return f.read()
    raise unittest.SkipTest("fixture %s not available" % name)


def bordered(text):
    return [l for l in text.split("\n") if l[:1] in ("|", "+")]


class SimCase(unittest.TestCase):
    model = "h200"
    gpus = 2

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpu-sim-")
        self.state = os.path.join(self.dir, "state.json")
        self.env = dict(os.environ, GPU_COSPLAY_SIM_STATE=self.state)
        self.env.pop("GPU_COSPLAY_SIM_EUID", None)
        self.ok("--sim-init", "--model", self.model, "--gpus", str(self.gpus))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def smi(self, *args, env=None, timeout=10):
        return subprocess.run([sys.executable, SIM] + list(args), env=env or self.env, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)

    def ok(self, *args):
        r = self.smi(*args)
        self.assertEqual(r.returncode, 0, "%s -> %s %s" % (args, r.stdout, r.stderr))
        return r.stdout

    def sim_set(self, key, value):
        self.ok("--sim-set", "%s=%s" % (key, json.dumps(value)))

    def dump(self):
        return json.loads(self.ok("--sim-dump"))

    def calls(self):
        with open(self.state + ".calls.log") as f:
            return [json.loads(l) for l in f if l.strip()]

    def assert_layout(self, text, fixture_text, header_lines):
        """Every bordered line has the fixture's width; the first header_lines match the fixture exactly."""
        got, want = bordered(text), bordered(fixture_text)
        width = len(want[0])
        self.assertTrue(got, text)
        for l in got:
            self.assertEqual(len(l), width, "width of %r" % l)
        self.assertEqual(got[:header_lines], want[:header_lines])


class TestReads(SimCase):
    def test_default_table_matches_h200_capture(self):
        out = self.ok()
        fx = fixture("h200-sxm-141gb__nvidia-smi.txt")
        self.assert_layout(out, fx, 7)
        got, want = bordered(out), bordered(fx)
        # GPU row: only bus id differs from the capture
        self.assertEqual(got[7].replace("00000000:18:00.0", "00000000:03:00.0"), want[7])
        self.assertEqual(got[-6:], want[-6:])  # processes section, no processes

    def test_default_table_mig_section(self):
        self.ok("-i", "0", "-mig", "1")
        self.ok("mig", "-i", "0", "-cgi", "9", "-C")
        out = self.ok()
        fx = fixture("h100-sxm-80gb__nvidia-smi-mig-r580.txt")
        got = bordered(out)
        want = bordered(fx)
        start = got.index("| MIG devices:" + " " * 76 + "|")
        wstart = want.index("| MIG devices:" + " " * 76 + "|")
        self.assertEqual(got[start:start + 6], want[wstart:wstart + 6])
        for l in got:
            self.assertEqual(len(l), 91, l)
        row = got[start + 6]
        self.assertRegex(row, r"^\|  0    2   0   0  \|")

    def test_lgip_81_columns(self):
        self.ok("-i", "0", "-mig", "1")
        out = self.ok("mig", "-lgip")
        self.assert_layout(out, fixture("h200-sxm-141gb__mig-lgip-wide-81col-excerpt-from-unit-test.txt"), 7)
        self.assertIn("|   0  MIG 1g.18gb         19     7/7        16.00      No     16     1     0   |", out)
        self.assertIn("|   0  MIG 7g.141gb         0     1/1        139.75     No     132    7     0   |", out)
        self.assertNotIn("|   1  MIG", out)  # GPU 1 has MIG disabled

    def test_lgip_no_mig(self):
        r = self.smi("mig", "-lgip")
        self.assertEqual(r.returncode, 6)
        self.assertEqual(r.stdout, fixture("t4__mig-lgip-no-mig-enabled-devices.txt"))

    def test_lgi_lci_layout(self):
        self.ok("-mig", "1")
        r = self.smi("mig", "-lgi")
        self.assertEqual((r.returncode, r.stderr), (6, "No GPU instances found: Not Found\n"))
        self.ok("mig", "-i", "0", "-cgi", "19,19", "-C")
        self.assert_layout(self.ok("mig", "-lgi"), fixture("h100-sxm-80gb__mig-lgi-7x1g10gb.txt"), 5)
        self.assert_layout(self.ok("mig", "-i", "0", "-lci"), fixture("h100-sxm-80gb__mig-lci-7x1g10gb.txt"), 6)
        self.assertIn("|   0  MIG 1g.18gb         19       13          6:1     |", self.ok("mig", "-lgi"))
        self.assertIn("|   0     13       MIG 1g.18gb          0         0          0:1     |", self.ok("mig", "-lci"))

    def test_q_matches_capture_layout(self):
        out = self.ok("-i", "0", "-q")
        fx = fixture("h200-sxm-141gb__nvidia-smi-a.txt").split("\n")
        got = out.split("\n")[1:]  # real output starts with a blank line
        self.assertEqual(len(got[:len(fx)]), len(fx))
        for g, w in zip(got, fx):
            self.assertEqual(g.partition(":")[0], w.partition(":")[0])
        self.assertIn("    Persistence Mode                      : Enabled", out)
        self.ok("-i", "0", "-lgc", "1200,1200")
        self.ok("-i", "0", "-pl", "450")
        out = self.ok("-i", "0", "-q")
        self.assertIn("        Graphics                          : 1200 MHz", out)
        self.assertIn("        Current Power Limit               : 450.00 W", out)
        self.assertIn("        Default Power Limit               : 700.00 W", out)

    def test_q_processes_and_mig_pending(self):
        self.sim_set("gpus.1.processes", [{"pid": 4242, "name": "python3", "used_mib": 1024}])
        self.sim_set("mig_needs_reset", True)
        out = self.ok("-i", "0", "-mig", "1")
        self.assertIn("Warning: MIG mode is in pending enable state for GPU 00000000:18:00.0:In use by another client", out)
        q = self.ok("-q")
        self.assertIn("        Current                           : Disabled\n        Pending                           : Enabled", q)
        self.assertIn("        Process ID                        : 4242", q)

    def test_L_creation_order(self):
        self.ok("-i", "0", "-mig", "1")
        self.ok("mig", "-i", "0", "-cgi", "19,9", "-C")  # GI 13 (slot 6) then GI 1 (3g at 0:4)
        out = self.ok("-L")
        lines = out.split("\n")
        self.assertRegex(lines[1], r"^  MIG 1g\.18gb     Device  0: \(UUID: MIG-[0-9a-f-]{36}\)$")
        self.assertRegex(lines[2], r"^  MIG 3g\.71gb     Device  1: \(UUID: MIG-")
        st = self.dump()
        self.assertEqual([gi["id"] for gi in st["gpus"][0]["gis"]], [13, 1])

    def test_query_gpu_csv(self):
        out = self.ok("--query-gpu=index,name,memory.total,power.limit,power.min_limit,clocks.max.graphics,"
                      "persistence_mode,mig.mode.current", "--format=csv")
        self.assertEqual(out.split("\n")[0], "index, name, memory.total [MiB], power.limit [W], power.min_limit [W], "
                                             "clocks.max.graphics [MHz], persistence_mode, mig.mode.current")
        self.assertEqual(out.split("\n")[1], "0, NVIDIA H200, 143771 MiB, 700.00 W, 200.00 W, 1980 MHz, Enabled, Disabled")
        out = self.ok("-i", "1", "--query-gpu=power.max_limit,mig.mode.pending", "--format=csv,noheader,nounits")
        self.assertEqual(out, "700.00, Disabled\n")

    def test_bad_args_and_index(self):
        r = self.smi("--frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn("Invalid combination of input arguments", r.stderr)
        r = self.smi("-i", "5", "-q")
        self.assertEqual((r.returncode, r.stdout), (6, fixture("t4__nvidia-smi-i-1-no-devices-found.txt")))


class TestWrites(SimCase):
    def test_seven_1g_then_insufficient(self):
        self.ok("-i", "0", "-mig", "1")
        ids = []
        for _ in range(7):
            out = self.ok("mig", "-i", "0", "-cgi", "1g.18gb", "-C")
            ids.append(int(out.split("GPU instance ID")[1].split()[0]))
        self.assertEqual(ids, [13, 11, 12, 7, 8, 9, 10])
        self.assertEqual(len(set(ids)), 7)
        self.assertNotEqual(ids, sorted(ids))
        r = self.smi("mig", "-i", "0", "-cgi", "19", "-C")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stderr, "Unable to create a GPU instance on GPU  0 using profile 19: Insufficient Resources\n"
                                   "Failed to create GPU instances: Insufficient Resources\n")

    def test_success_lines_match_capture(self):
        self.ok("-i", "0", "-mig", "1")
        out = self.ok("mig", "-i", "0", "-cgi", ",".join(["19"] * 7), "-C")
        want = fixture("h100-sxm-80gb__mig-cgi-19x7-C.txt").replace("1g.10gb", "1g.18gb")
        self.assertEqual(out, want)

    def test_3g_after_4x1g(self):
        self.ok("-i", "0", "-mig", "1")
        self.ok("mig", "-i", "0", "-cgi", "19,19,19,19")  # slots 6,4,5,0
        lgip = self.ok("mig", "-i", "0", "-lgip")
        self.assertIn("|   0  MIG 1g.18gb         19     3/7", lgip)
        self.assertIn("|   0  MIG 3g.71gb          9     0/2", lgip)
        self.assertIn("|   0  MIG 2g.35gb         14     1/3", lgip)
        r = self.smi("mig", "-i", "0", "-cgi", "3g.71gb")
        self.assertIn("Insufficient Resources", r.stderr)
        # destroy GI 7 (slot 0): 3g at 0:4 fits again
        self.ok("mig", "-i", "0", "-gi", "7", "-dgi")
        out = self.ok("mig", "-i", "0", "-cgi", "9", "-C")
        self.assertIn("Successfully created GPU instance ID  1 on GPU  0 using profile MIG 3g.71gb (ID  9)", out)
        self.assertIn("using profile MIG 3g.71gb (ID  2)", out)

    def test_me_only_once(self):
        self.ok("-i", "0", "-mig", "1")
        self.ok("mig", "-i", "0", "-cgi", "20")
        r = self.smi("mig", "-i", "0", "-cgi", "20")
        self.assertIn("using profile 20: Insufficient Resources", r.stderr)

    def test_destroy_rules_and_mig_off(self):
        self.ok("-i", "0", "-mig", "1")
        self.ok("mig", "-i", "0", "-cgi", "19", "-C")
        r = self.smi("-i", "0", "-mig", "0")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stderr, "Unable to disable MIG Mode for GPU 00000000:18:00.0: In use by another client\n"
                                   "Terminating early due to previous errors.\n")
        r = self.smi("mig", "-i", "0", "-gi", "13", "-dgi")
        self.assertIn("In use by another client", r.stderr)
        self.assertEqual(self.ok("mig", "-i", "0", "-gi", "13", "-ci", "0", "-dci"),
                         "Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID 13\n")
        self.assertEqual(self.ok("mig", "-i", "0", "-gi", "13", "-dgi"),
                         "Successfully destroyed GPU instance ID 13 from GPU  0\n")
        self.assertEqual(self.ok("-i", "0", "-mig", "0"), "Disabled MIG Mode for GPU 00000000:18:00.0\nAll done.\n")

    def test_mig_refused_with_processes(self):
        self.sim_set("gpus.0.processes", [{"pid": 7, "name": "python3", "used_mib": 100}])
        r = self.smi("-i", "0", "-mig", "1")
        self.assertIn("In use by another client", r.stderr)
        self.assertFalse(self.dump()["gpus"][0]["mig_current"])

    def test_power_limit(self):
        out = self.ok("-i", "1", "-pl", "500")
        self.assertEqual(out, "Power limit for GPU 00000000:2A:00.0 was set to 500.00 W from 700.00 W.\nAll done.\n")
        r = self.smi("-i", "1", "-pl", "50")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.split("\n")[0], fixture("hopper-700w-x4__pl-50-invalid-partial.txt")
                         .strip().replace("00000000:06:00.0", "00000000:2A:00.0"))
        self.assertEqual(self.dump()["gpus"][1]["power_limit"], 500.0)

    def test_clocks_and_pm(self):
        out = self.ok("-i", "0", "-lgc", "1410,1410")
        self.assertEqual(out, 'GPU clocks set to "(gpuClkMin 1410, gpuClkMax 1410)" for GPU 00000000:18:00.0\nAll done.\n')
        self.assertEqual(self.ok("-i", "0", "-rgc"), "All done.\n")
        self.assertIsNone(self.dump()["gpus"][0]["clocks_locked"])
        self.assertEqual(self.ok("-i", "0", "-pm", "0"), "Disabled persistence mode for GPU 00000000:18:00.0.\nAll done.\n")
        out = self.ok("-i", "0", "-mig", "1")
        self.assertIn("\n\nWarning: persistence mode is disabled on device 00000000:18:00.0.", out)

    def test_require_root(self):
        self.sim_set("require_root", True)
        env = dict(self.env, GPU_COSPLAY_SIM_EUID="1000")
        r = self.smi("-i", "0", "-pl", "500", env=env)
        self.assertEqual(r.returncode, 4)
        self.assertEqual(r.stderr, "Failed to set power management limit for GPU 00000000:18:00.0: Insufficient Permissions\n")
        r = self.smi("-i", "0", "-lgc", "1000,1000", env=env)
        self.assertEqual(r.returncode, 4)
        self.assertEqual(self.smi("-q", env=env).returncode, 0)  # reads still work
        self.assertEqual(self.smi("-i", "0", "-pl", "500", env=dict(self.env, GPU_COSPLAY_SIM_EUID="0")).returncode, 0)

    def test_require_root_for_some_changes(self):
        self.sim_set("require_root", ["-cgi"])
        env = dict(self.env, GPU_COSPLAY_SIM_EUID="1000")
        self.assertEqual(self.smi("-i", "0", "-mig", "1", env=env).returncode, 0)
        r = self.smi("mig", "-i", "0", "-cgi", "19", "-C", env=env)
        self.assertEqual(r.returncode, 4)
        self.assertIn("Unable to create a GPU instance on GPU  0 using profile 19: Insufficient Permissions", r.stderr)
        self.assertEqual(self.dump()["gpus"][0]["gis"], [])

    def test_l40s_no_mig(self):
        self.ok("--sim-init", "--model", "l40s", "--gpus", "1")
        r = self.smi("-i", "0", "-mig", "1")
        self.assertEqual(r.returncode, 3)
        self.assertIn("Not Supported", r.stderr)
        self.assertIn("[N/A]", self.ok("--query-gpu=mig.mode.current", "--format=csv,noheader"))

    def test_a30_ids(self):
        self.ok("--sim-init", "--model", "a30", "--gpus", "1")
        self.ok("-mig", "1")
        self.assertEqual(self.ok("mig", "-cgi", "14", "-C"), fixture("a30__mig-cgi-14-C.txt"))
        out = self.ok("mig", "-lgip")
        self.assertIn("|   0  MIG 1g.6gb          14     3/4        5.81", out)
        self.assertIn("|   0  MIG 4g.24gb          0     0/1", out)


class TestHarness(SimCase):
    def test_call_log(self):
        self.ok("-L")
        self.ok("-q")
        self.smi("-i", "9", "-q")
        c = self.calls()
        self.assertEqual([x["argv"] for x in c], [["-L"], ["-q"], ["-i", "9", "-q"]])
        self.assertEqual([x["exit"] for x in c], [0, 0, 6])

    def test_fault_fail(self):
        self.sim_set("faults", [{"at": 2, "action": "fail", "match": "-cgi"}])
        self.ok("-mig", "1")
        self.ok("mig", "-i", "0", "-cgi", "19")
        r = self.smi("mig", "-i", "0", "-cgi", "19")
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.strip())
        self.ok("mig", "-i", "0", "-cgi", "19")
        self.assertEqual(len(self.dump()["gpus"][0]["gis"]), 2)

    def test_fault_hang(self):
        self.sim_set("faults", [{"at": 1, "action": "hang"}])
        with self.assertRaises(subprocess.TimeoutExpired):
            self.smi("-L", timeout=1.5)
        # lock released while hanging: later calls work
        self.ok("-L")
        self.assertEqual(len(self.calls()), 2)

    def test_garbage(self):
        self.sim_set("garbage", True)
        out = self.ok("mig", "-lgip")
        self.assertNotIn("GPU instance profiles", out)

    def test_binary_garbage(self):
        self.sim_set("garbage", "binary")
        r = subprocess.run([sys.executable, SIM, "-L"], env=self.env, stdout=subprocess.PIPE, timeout=10)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(len(r.stdout), 4094)
        self.assertIn(b"\x00", r.stdout)
        with self.assertRaises(UnicodeDecodeError):
            r.stdout.decode("utf-8")

    def test_concurrent_creates(self):
        self.ok("-mig", "1")
        with ThreadPoolExecutor(7) as ex:
            rs = list(ex.map(lambda _: self.smi("mig", "-i", "0", "-cgi", "19", "-C"), range(7)))
        self.assertTrue(all(r.returncode == 0 for r in rs), [r.stderr for r in rs])
        ids = sorted(gi["id"] for gi in self.dump()["gpus"][0]["gis"])
        self.assertEqual(ids, list(range(7, 14)))
        self.assertEqual(len([c for c in self.calls() if "-cgi" in c["argv"]]), 7)

    def test_missing_state_env(self):
        env = dict(self.env)
        env.pop("GPU_COSPLAY_SIM_STATE")
        r = self.smi("-L", env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("GPU_COSPLAY_SIM_STATE", r.stderr)


if __name__ == "__main__":
    unittest.main()
