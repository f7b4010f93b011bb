"""gpu_cosplay_perf.py on a GPU that a fake torch and a fake libcuda play (test/py/fakes/fake_gpu_torch.py): broken
CUDA init, a VRAM limit a few MiB short, soft and hard caps, a slow 2-SM share, and what the report records.
No real GPU has run these paths yet; the fakes pin down the behaviour the issue asked for (issue 21)."""
import json
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "runtime-hooks"))
sys.path.insert(0, os.path.join(ROOT, "test", "py", "fakes"))

import gpu_cosplay_perf as perf  # noqa: E402
from fake_gpu_torch import FakeDriver, FakeGpu, make_torch  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30


def run(gpu, *args, driver=None):
    drv = driver or FakeDriver(gpu)
    rc, text = perf.run(list(args) + ["--no-samples"], torch_module=make_torch(gpu), driver_factory=lambda: drv)
    return rc, json.loads(text)


class CudaMustWorkTest(unittest.TestCase):
    """Point 1: a session that has a GPU asks for CUDA; when CUDA does not work it is one error, not a CPU run."""

    def test_init_error_is_refused_with_the_reason(self):
        gpu = FakeGpu(cuda_ok=False, init_error="CUDA error: MPS client failed to connect to the MPS control daemon")
        rc, out = run(gpu, "--device", "cuda")
        self.assertEqual(rc, 3)
        self.assertEqual(out["error"]["code"], "NO_CUDA")
        self.assertIn("MPS client failed to connect", out["error"]["message"])

    def test_cpu_only_torch_says_so(self):
        rc, out = run(FakeGpu(cuda_ok=False, cuda_build=None), "--device", "cuda")
        self.assertEqual(rc, 3)
        self.assertIn("CPU-only build", out["error"]["message"])

    def test_asked_for_the_cpu_it_is_labelled(self):
        rc, out = run(FakeGpu(), "--device", "cpu")
        self.assertEqual(rc, 0)
        self.assertEqual(out["device"]["kind"], "cpu")
        self.assertIn("asked for the CPU", out["device"]["reason"])

    def test_device_open_errors_name_the_step(self):
        for step in ("mem_get_info", "get_device_name"):
            gpu = FakeGpu(fail_at={step: RuntimeError("CUDA error: unspecified launch failure\nmore lines")})
            rc, out = run(gpu, "--device", "cuda")
            self.assertEqual(rc, 3)
            self.assertEqual(out["error"]["code"], "DEVICE_OPEN")
            self.assertIn(step, out["error"]["message"])
            self.assertNotIn("Traceback", out["error"]["message"])

    def test_an_unexpected_exception_is_one_error(self):
        orig = perf.measure_vram_axis
        perf.measure_vram_axis = lambda *a, **k: 1 / 0
        try:
            rc, out = run(FakeGpu(), "--device", "cuda")
        finally:
            perf.measure_vram_axis = orig
        self.assertEqual(rc, 3)
        self.assertEqual(out["error"]["code"], "PERF_UNEXPECTED")
        self.assertIn("at vram", out["error"]["message"])


class VramSearchTest(unittest.TestCase):
    """Point 2: the figure is the largest allocation that works, to 32 MiB, with every refusal's text."""

    def test_a_limit_a_few_mib_short_reads_as_such(self):
        gpu = FakeGpu(total_bytes=24 * GIB, alloc_limit_bytes=24 * GIB - 5 * MIB,
                      oom_text="CUDA out of memory. Tried to allocate 24.00 GiB (fraction check)")
        rc, out = run(gpu, "--device", "cuda")
        self.assertEqual(rc, 0)
        v = out["axes"]["vram"]
        # the old probe tried 100/90/75 %: 90 % of the cap, a WARN
        self.assertGreater(v["measured"], 24 - 40 / 1024)
        self.assertLessEqual(v["measured"], 24)
        self.assertTrue(v["overCapRefused"])
        self.assertIn("fraction check", v["search"]["refusals"][0]["text"])

    def test_eleven_percent_short_is_measured_not_a_step(self):
        gpu = FakeGpu(total_bytes=24 * GIB, alloc_limit_bytes=int(24 * GIB * 0.89))
        v = run(gpu, "--device", "cuda")[1]["axes"]["vram"]
        self.assertAlmostEqual(v["measured"], 24 * 0.89, delta=0.04)
        self.assertFalse(v["underCapOk"])


class HardCapTest(unittest.TestCase):
    """Point 3: the driver itself is asked for (limit - held + 64 MiB); only out of memory counts as a refusal."""

    def test_soft_cap_without_cupy(self):
        gpu = FakeGpu(total_bytes=24 * GIB)
        drv = FakeDriver(gpu)
        v = run(gpu, "--device", "cuda", driver=drv)[1]["axes"]["vram"]
        self.assertIs(v["hard"], False)
        self.assertEqual(drv.asked, [24 * GIB + 64 * MIB])

    def test_hard_cap(self):
        gpu = FakeGpu(total_bytes=24 * GIB)
        v = run(gpu, "--device", "cuda", driver=FakeDriver(gpu, hard_limit_bytes=24 * GIB))[1]["axes"]["vram"]
        self.assertIs(v["hard"], True)
        self.assertEqual(v["driver"]["refusedBy"], "limit")

    def test_physical_memory_refusing_is_not_a_hard_cap(self):
        gpu = FakeGpu(total_bytes=24 * GIB)
        v = run(gpu, "--device", "cuda", driver=FakeDriver(gpu, free_bytes=10 * GIB))[1]["axes"]["vram"]
        self.assertIsNone(v["hard"])
        self.assertEqual(v["driver"]["refusedBy"], "physical")

    def test_an_illegal_access_is_not_a_refusal(self):
        gpu = FakeGpu(total_bytes=24 * GIB)
        v = run(gpu, "--device", "cuda", driver=FakeDriver(gpu, other_error=700))[1]["axes"]["vram"]
        self.assertIsNone(v["hard"])
        self.assertIn("CUDA_ERROR_ILLEGAL_ADDRESS", v["hardReason"])

    def test_mps_limit_is_the_pinned_one(self):
        gpu = FakeGpu(total_bytes=24 * GIB)
        drv = FakeDriver(gpu, hard_limit_bytes=(24576 + 1024) * MIB)
        os.environ["GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB"] = str(24576 + 1024)
        try:
            v = run(gpu, "--device", "cuda", driver=drv)[1]["axes"]["vram"]
        finally:
            del os.environ["GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB"]
        self.assertEqual(drv.asked, [(24576 + 1024 + 64) * MIB])
        self.assertIs(v["hard"], True)


class SteadyStateAndBudgetTest(unittest.TestCase):
    """Points 4 and 6: warm-up by time until the rate settles, 1-2 s windows, sizes that keep a slow share short."""

    def test_a_slow_two_sm_share_stays_within_the_budget(self):
        # FP32 on 2 of 132 H200 SMs at a capped clock: one 8192^3 call would take over 2 s
        gpu = FakeGpu(fp32_tflops=0.5, bf16_tflops=8.0, bandwidth_gbs=300.0, total_bytes=24 * GIB)
        rc, out = run(gpu, "--device", "cuda")
        self.assertEqual(rc, 0)
        self.assertLess(out["axes"]["fp32"]["n"], 8192)
        self.assertLessEqual(gpu.max_gemm_call_s, 4 * perf.CALL_TARGET_S)
        self.assertLess(gpu.now, 30.0)  # every device second the run spent, warm-up and probes included
        self.assertAlmostEqual(out["axes"]["fp32"]["measured"], 0.5, delta=0.01)

    def test_warm_up_runs_until_the_rate_settles_and_the_window_is_long(self):
        gpu = FakeGpu(warm_calls=40)  # the first 40 calls run at half speed
        out = run(gpu, "--device", "cuda")[1]
        for axis in ("fp32", "bf16", "bandwidth"):
            a = out["axes"][axis]
            self.assertTrue(a["settled"], (axis, a))
            self.assertGreaterEqual(a["windowS"], 1.0, (axis, a))
            self.assertLessEqual(a["windowS"], 2.5, (axis, a))
        self.assertAlmostEqual(out["axes"]["bf16"]["measured"], 600, delta=6)

    def test_samples_are_tagged_by_axis(self):
        rows = [{"smClockMHz": 1980.0, "axis": "fp32"}, {"smClockMHz": 1410.0, "axis": "bf16"},
                {"smClockMHz": 1400.0, "axis": "bf16"}]
        s = perf.summarise_samples(rows)
        self.assertEqual(s["byAxis"]["fp32"]["smClockMHz"]["median"], 1980.0)
        self.assertEqual(s["byAxis"]["bf16"]["smClockMHz"]["median"], 1405.0)


class RecordTest(unittest.TestCase):
    """Point 5: what was measured, so a report can be judged later."""

    def test_the_report_records_device_settings_and_sizes(self):
        os.environ["CUDA_MPS_PIPE_DIRECTORY"] = "/tmp/mps-pipe"
        try:
            out = run(FakeGpu(), "--device", "cuda")[1]
        finally:
            del os.environ["CUDA_MPS_PIPE_DIRECTORY"]
        d = out["device"]
        self.assertEqual(d["clientName"], "NVIDIA GeForce RTX 3090")
        self.assertEqual(d["smCount"], 2)
        self.assertEqual(d["mps"]["env"]["CUDA_MPS_PIPE_DIRECTORY"], "/tmp/mps-pipe")
        self.assertIn("entrypointStatus", d["mps"])
        self.assertEqual(d["matmul"]["cudaMatmulAllowTf32"], False)
        self.assertEqual(d["matmul"]["float32MatmulPrecision"], "highest")
        self.assertEqual(out["sizes"]["windowS"], perf.WINDOW_S["cuda"])
        self.assertIn("n", out["axes"]["fp32"])


if __name__ == "__main__":
    unittest.main()
