"""The nvidia-smi shim as a process: finds the real binary, streams, forwards signals and exit codes."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(ROOT, "runtime-hooks")
SHIM = os.path.join(HOOKS, "nvidia-smi")
FIX = os.path.join(ROOT, "test", "fixtures", "nvidia-smi")

CONTRACT = {"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576",
            "GPU_COSPLAY_TDP_W": "350"}

FAKE = r'''#!%(py)s
import os, signal, sys, time
args = sys.argv[1:]
mode = os.environ.get("FAKE_MODE", "table")
if mode == "table":
    sys.stdout.write(open(os.environ["FAKE_FILE"]).read())
elif mode == "slow":
    print("first line", flush=True)
    time.sleep(float(os.environ.get("FAKE_SLEEP", "1.5")))
    print("second line", flush=True)
elif mode == "exit":
    print("bye", flush=True)
    sys.exit(int(os.environ.get("FAKE_RC", "7")))
elif mode == "term":
    def h(sig, frame):
        open(os.environ["FAKE_MARK"], "w").write("TERM")
        print("terminated", flush=True)
        sys.exit(42)
    signal.signal(signal.SIGTERM, h)
    print("ready", flush=True)
    time.sleep(30)
elif mode == "args":
    print("real args: " + " ".join(args))
'''


class ShimProcessTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.real_dir = os.path.join(self.tmp, "driver-bin")
        os.makedirs(self.real_dir)
        self.real = os.path.join(self.real_dir, "nvidia-smi")
        with open(self.real, "w") as fh:
            fh.write(FAKE % {"py": sys.executable})
        os.chmod(self.real, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, contract=True, path=None, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_")}
        env["PATH"] = path or (HOOKS + os.pathsep + self.real_dir + os.pathsep + os.environ.get("PATH", ""))
        if contract:
            env.update(CONTRACT)
        env.update(extra)
        return env

    def test_finds_real_binary_skipping_its_own_dir(self):
        # own dir first on PATH, plus a symlink to the shim in another dir: both are skipped
        link_dir = os.path.join(self.tmp, "links")
        os.makedirs(link_dir)
        os.symlink(SHIM, os.path.join(link_dir, "nvidia-smi"))
        path = os.pathsep.join([HOOKS, link_dir, self.real_dir, "/usr/bin", "/bin"])
        p = subprocess.run(["nvidia-smi", "-x", "y"], env=self.env(path=path, FAKE_MODE="args"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode(), "real args: -x y\n")
        self.assertTrue(os.path.samefile(shutil.which("nvidia-smi", path=path), SHIM))

    def test_no_real_binary(self):
        p = subprocess.run([sys.executable, SHIM], env=self.env(path=HOOKS), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=30)
        self.assertEqual(p.returncode, 127)
        self.assertIn(b"not found", p.stderr)

    def test_rewrites_table(self):
        p = subprocess.run(["nvidia-smi"], env=self.env(FAKE_MODE="table", FAKE_FILE=os.path.join(
            FIX, "h100-sxm-80gb__nvidia-smi-mig-r580.txt")), stdout=subprocess.PIPE, timeout=30)
        out = p.stdout.decode()
        self.assertIn("NVIDIA GeForce RTX 3090", out)
        self.assertNotIn("H100", out)
        self.assertNotIn("MIG devices", out)

    def test_rewrites_table_with_one_card_per_rank(self):
        ranks = '[{"uuid": "MIG-aaaa-0", "mpsPipe": null}, {"uuid": "MIG-bbbb-1", "mpsPipe": null}]'
        fx = os.path.join(FIX, "h100-sxm-80gb__nvidia-smi-mig-r580.txt")
        p = subprocess.run(["nvidia-smi"], env=self.env(FAKE_MODE="table", FAKE_FILE=fx, GPU_COSPLAY_RANKS=ranks),
                           stdout=subprocess.PIPE, timeout=30)
        rows = [l for l in p.stdout.decode().splitlines() if "NVIDIA GeForce RTX 3090" in l]
        self.assertEqual([l.split()[1] for l in rows], ["0", "1"])
        p = subprocess.run(["nvidia-smi"], env=self.env(FAKE_MODE="table", FAKE_FILE=fx, GPU_COSPLAY_RANKS="[oops"),
                           stdout=subprocess.PIPE, timeout=30)
        rows = [l for l in p.stdout.decode().splitlines() if "NVIDIA GeForce RTX 3090" in l]
        self.assertEqual([l.split()[1] for l in rows], ["0"])

    def test_mounted_alone_beside_the_hooks_folder(self):
        # a user's own image run unprivileged: the shim alone at /opt/gpu-cosplay/bin, the hooks at .../hooks
        opt = os.path.join(self.tmp, "opt")
        os.makedirs(os.path.join(opt, "bin"))
        shutil.copy(SHIM, os.path.join(opt, "bin", "nvidia-smi"))
        shutil.copytree(HOOKS, os.path.join(opt, "hooks"))
        fx = os.path.join(FIX, "h100-sxm-80gb__nvidia-smi-mig-r580.txt")
        path = os.pathsep.join([os.path.join(opt, "bin"), self.real_dir, "/usr/bin", "/bin"])
        p = subprocess.run(["nvidia-smi"], env=self.env(path=path, FAKE_MODE="table", FAKE_FILE=fx),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("NVIDIA GeForce RTX 3090", p.stdout.decode())

    def test_no_contract_is_passthrough(self):
        fx = os.path.join(FIX, "h100-sxm-80gb__nvidia-smi-mig-r580.txt")
        p = subprocess.run(["nvidia-smi"], env=self.env(contract=False, FAKE_MODE="table", FAKE_FILE=fx),
                           stdout=subprocess.PIPE, timeout=30)
        with open(fx, "rb") as fh:
            self.assertEqual(p.stdout, fh.read())

    def test_streams_first_line_before_child_exits(self):
        t0 = time.time()
        p = subprocess.Popen(["nvidia-smi", "dmon"], env=self.env(FAKE_MODE="slow", FAKE_SLEEP="2"),
                             stdout=subprocess.PIPE)
        first = p.stdout.readline()
        t_first = time.time() - t0
        self.assertIsNone(p.poll(), "child should still be running")
        rest = p.stdout.read()
        p.wait(timeout=30)
        p.stdout.close()
        self.assertEqual(first, b"first line\n")
        self.assertEqual(rest, b"second line\n")
        self.assertLess(t_first, 1.8)
        self.assertEqual(p.returncode, 0)

    def test_exit_code_propagated(self):
        p = subprocess.run(["nvidia-smi"], env=self.env(FAKE_MODE="exit", FAKE_RC="7"), stdout=subprocess.PIPE,
                           timeout=30)
        self.assertEqual(p.returncode, 7)
        self.assertEqual(p.stdout, b"bye\n")

    def test_sigterm_forwarded(self):
        mark = os.path.join(self.tmp, "mark")
        p = subprocess.Popen(["nvidia-smi", "-l", "1"], env=self.env(FAKE_MODE="term", FAKE_MARK=mark),
                             stdout=subprocess.PIPE, start_new_session=True)
        self.assertEqual(p.stdout.readline(), b"ready\n")
        p.send_signal(signal.SIGTERM)  # only the shim gets it (own session): it must forward
        rest = p.stdout.read()
        p.wait(timeout=30)
        p.stdout.close()
        self.assertEqual(p.returncode, 42)
        self.assertEqual(rest, b"terminated\n")
        with open(mark) as fh:
            self.assertEqual(fh.read(), "TERM")


if __name__ == "__main__":
    unittest.main()
