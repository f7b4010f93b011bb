"""Tests for the MPS control stand-in in test/sim/nvidia-cuda-mps-control: a real daemon process per pipe directory."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPS = os.path.join(ROOT, "test", "sim", "nvidia-cuda-mps-control")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie is gone for our purposes
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


class MpsSimTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpu-mps-sim-")
        self.pipe = os.path.join(self.dir, "pipe")
        self.logs = os.path.join(self.dir, "log")
        self.record = os.path.join(self.dir, "calls.jsonl")
        self.env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.pipe, CUDA_MPS_LOG_DIRECTORY=self.logs,
                        GPU_COSPLAY_SIM_MPS_LOG=self.record, CUDA_VISIBLE_DEVICES="MIG-1234")
        self.env.pop("GPU_COSPLAY_SIM_MPS_FAIL", None)

    def tearDown(self):
        if os.path.exists(os.path.join(self.pipe, "control")):
            self.control("quit\n")
        shutil.rmtree(self.dir)

    def run_mps(self, args, stdin="", env=None):
        return subprocess.run([MPS] + args, input=stdin, env=env or self.env, capture_output=True, text=True, timeout=30)

    def start(self):
        result = self.run_mps(["-d"])
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.pipe, "nvidia-cuda-mps-control.pid")) as f:
            return int(f.read())

    def control(self, commands):
        return self.run_mps([], stdin=commands)

    def test_start_runs_a_daemon_that_outlives_the_caller_and_logs(self):
        pid = self.start()
        self.assertTrue(alive(pid))
        with open(os.path.join(self.logs, "control.log")) as f:
            log = f.read()
        self.assertIn("Starting control daemon using socket %s/control" % self.pipe, log)

    def test_a_second_daemon_on_the_same_pipe_directory_is_refused(self):
        pid = self.start()
        second = self.run_mps(["-d"])
        self.assertEqual(second.returncode, 1)
        self.assertIn("An instance of this daemon is already running", second.stderr)
        self.assertTrue(alive(pid))
        other = dict(self.env, CUDA_MPS_PIPE_DIRECTORY=os.path.join(self.dir, "pipe2"))
        self.assertEqual(self.run_mps(["-d"], env=other).returncode, 0)
        self.run_mps([], stdin="quit\n", env=other)

    def test_set_and_get_defaults(self):
        self.start()
        result = self.control("set_default_active_thread_percentage 25\nget_default_active_thread_percentage\n"
                              "set_default_device_pinned_mem_limit 0 2048M\nget_default_device_pinned_mem_limit 0\n"
                              "set_default_device_pinned_mem_limit 1 900M\nget_default_device_pinned_mem_limit 1\n")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["25.0", "25.0", "2G", "900M"])
        self.assertEqual(self.control("get_default_active_thread_percentage\n").stdout.strip(), "25.0")

    def test_quit_leaves_no_process_and_no_socket(self):
        pid = self.start()
        result = self.control("quit\n")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(alive(pid))
        self.assertFalse(os.path.exists(os.path.join(self.pipe, "control")))
        self.assertFalse(os.path.exists(os.path.join(self.pipe, "nvidia-cuda-mps-control.pid")))
        # and a new daemon can start on the same folder; the defaults are lost, as documented
        self.start()
        self.assertEqual(self.control("get_default_active_thread_percentage\n").stdout.strip(), "100.0")

    def test_without_a_daemon_the_client_cannot_connect(self):
        for command in ("get_default_active_thread_percentage\n", "quit\n"):
            result = self.control(command)
            self.assertEqual(result.returncode, 1)
            self.assertIn("Cannot find MPS control daemon process", result.stdout)

    def test_a_killed_daemon_leaves_a_stale_socket_that_a_new_start_replaces(self):
        pid = self.start()
        os.kill(pid, 9)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertFalse(alive(pid))
        self.assertEqual(self.control("get_default_active_thread_percentage\n").returncode, 1)
        self.start()

    def test_bad_input_is_refused_and_changes_nothing(self):
        self.start()
        for command in ("set_default_active_thread_percentage 0", "set_default_active_thread_percentage 101",
                        "set_default_active_thread_percentage many", "set_default_device_pinned_mem_limit 0 2048",
                        "set_default_device_pinned_mem_limit 0 2048MB", "set_default_device_pinned_mem_limit 0 -5M",
                        "set_default_device_pinned_mem_limit 2048M", "no_such_command"):
            result = self.control(command + "\n")
            self.assertEqual(result.returncode, 1, command)
            self.assertNotEqual(result.stderr.strip(), "", command)
        got = self.control("get_default_active_thread_percentage\nget_default_device_pinned_mem_limit 0\n")
        self.assertEqual(got.stdout.split(), ["100.0", "0M"])

    def test_every_command_is_recorded_with_the_callers_env(self):
        self.start()
        self.control("set_default_active_thread_percentage 50\nquit\n")
        with open(self.record) as f:
            calls = [json.loads(line) for line in f]
        self.assertEqual([c["command"] for c in calls], ["-d", "set_default_active_thread_percentage 50", "quit"])
        for call in calls:
            self.assertEqual(call["cudaVisibleDevices"], "MIG-1234")
            self.assertEqual(call["pipeDirectory"], self.pipe)
            self.assertEqual(call["uid"], os.getuid())

    def test_an_injected_fault_fails_the_named_command(self):
        env = dict(self.env, GPU_COSPLAY_SIM_MPS_FAIL="-d")
        self.assertEqual(self.run_mps(["-d"], env=env).returncode, 1)
        self.assertFalse(os.path.exists(os.path.join(self.pipe, "control")))

    def test_a_daemon_that_dies_before_answering_fails_the_start_and_leaves_no_socket(self):
        os.makedirs(os.path.join(self.logs, "control.log"))  # a folder: the daemon cannot open its log
        result = self.run_mps(["-d"])
        self.assertEqual(result.returncode, 1)
        self.assertNotEqual(result.stderr.strip(), "")
        self.assertFalse(os.path.exists(os.path.join(self.pipe, "control")))
        self.assertEqual(self.control("get_default_active_thread_percentage\n").returncode, 1)


if __name__ == "__main__":
    unittest.main()
