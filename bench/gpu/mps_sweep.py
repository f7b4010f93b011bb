#!/usr/bin/env python3
"""What an MPS active thread percentage really grants (issue 19.8): run on a machine with a real GPU.

For P = 5..100 in steps of 5 this starts an MPS control daemon of its own (its own pipe and log directories, the
GPU left as it is: no MIG, clock, power, persistence or compute-mode change), sets it up the way a session's
entrypoint does (`set_default_active_thread_percentage P`), and runs one client that records
  - the distinct SMs its kernels ran on (a kernel that stores %smid from many long-running blocks),
  - cudaDevAttrMultiProcessorCount as the client sees it,
  - BF16 GEMM TFLOPS (8192^3, CUDA events, median of timed runs).
It also checks `set_default_device_pinned_mem_limit` (an allocation past the limit must fail) and records the
control daemon's answers verbatim, for the parsers that read them.

Usage: [MPS_SWEEP_PERCENTAGES=1,2,3] python3 bench/gpu/mps_sweep.py [OUT_DIR]   (prints a table; writes mps-sweep.json and control.txt)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KERNEL = r"""
extern "C" __global__ void record_smid(unsigned int* out, long long spin) {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    if (threadIdx.x == 0) out[blockIdx.x] = id;
    long long t0 = clock64();
    while (clock64() - t0 < spin) {}
}
"""


def client():
    import cupy as cp
    import torch
    out = {"percentage": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE_SET", "none")}
    dev = torch.cuda.current_device()
    out["torchSms"] = torch.cuda.get_device_properties(dev).multi_processor_count
    out["attrSms"] = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrMultiProcessorCount, 0)
    kernel = cp.RawKernel(KERNEL, "record_smid")
    blocks = 132 * 16
    ids = cp.zeros(blocks, dtype=cp.uint32)
    kernel((blocks,), (128,), (ids, cp.int64(1_000_000)))
    cp.cuda.Device().synchronize()
    out["smidSms"] = len(set(ids.get().tolist()))
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1000)
    out["bf16Tflops"] = round(2 * n**3 / statistics.median(times) / 1e12, 1)
    limit = os.environ.get("PINNED_PROBE_GIB")
    if limit:
        del a, b
        torch.cuda.empty_cache()
        results = {}
        for gib in (1, 3):
            try:
                x = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
                del x
                torch.cuda.empty_cache()
                results[str(gib)] = "ok"
            except Exception as exc:  # the refusal's text is the finding
                results[str(gib)] = str(exc).splitlines()[0][:200]
        out["pinnedProbe"] = results
    print(json.dumps(out))


def control(env, text):
    p = subprocess.run([MPS], input=text, capture_output=True, text=True, env=env, timeout=30)
    return p.returncode, p.stdout, p.stderr


def run_client(env, timeout=120):
    p = subprocess.run([sys.executable, __file__, "--client"], capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout)[-600:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def with_daemon(base, commands, client_env_extra, log):
    root = tempfile.mkdtemp(prefix="gc-mps-")
    env = dict(base, CUDA_MPS_PIPE_DIRECTORY=root + "/pipe", CUDA_MPS_LOG_DIRECTORY=root + "/log")
    os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"])
    os.makedirs(env["CUDA_MPS_LOG_DIRECTORY"])
    d = subprocess.run([MPS, "-d"], capture_output=True, text=True, env=env, timeout=30)
    log.append("$ nvidia-cuda-mps-control -d -> rc %d %r %r" % (d.returncode, d.stdout, d.stderr))
    if d.returncode != 0:
        return {"error": "daemon: " + d.stderr + d.stdout}
    try:
        for c in commands:
            rc, o, e = control(env, c + "\n")
            log.append("$ echo %s | nvidia-cuda-mps-control -> rc %d stdout %r stderr %r" % (c, rc, o, e))
        result = run_client(dict(env, **client_env_extra))
        for c in ("get_server_list", "get_default_active_thread_percentage"):
            rc, o, e = control(env, c + "\n")
            log.append("$ echo %s | nvidia-cuda-mps-control -> rc %d stdout %r stderr %r" % (c, rc, o, e))
        return result
    finally:
        rc, o, e = control(env, "quit\n")
        log.append("$ echo quit -> rc %d %r %r" % (rc, o, e))
        time.sleep(0.5)
        try:
            with open(env["CUDA_MPS_LOG_DIRECTORY"] + "/control.log") as fh:
                log.append("control.log tail: " + fh.read()[-400:])
        except OSError:
            pass
        shutil.rmtree(root, ignore_errors=True)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    base = dict(os.environ)
    log = []
    info = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,mig.mode.current,compute_mode,clocks.sm,clocks.max.sm,power.limit",
                           "--format=csv"], capture_output=True, text=True).stdout
    print(info)
    picked = os.environ.get("MPS_SWEEP_PERCENTAGES")  # e.g. "1,2,3": only these, no baseline or pinned check
    rows = [] if picked else [dict(run_client(base), percentage="no MPS")]
    for p in [int(x) for x in picked.split(",")] if picked else range(5, 101, 5):
        r = with_daemon(base, ["set_default_active_thread_percentage %d" % p], {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE_SET": str(p)}, log)
        r["percentage"] = p
        rows.append(r)
        print(json.dumps(r), flush=True)
    pinned = None if picked else with_daemon(base, ["set_default_active_thread_percentage 100", "set_default_device_pinned_mem_limit 0 2048M",
                                "get_default_device_pinned_mem_limit 0"],
                         {"PINNED_PROBE_GIB": "2", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE_SET": "100 pinned 2048M"}, log)
    print(json.dumps(pinned), flush=True)
    with open(os.path.join(out_dir, "mps-sweep.json"), "w") as fh:
        json.dump({"gpu": info, "rows": rows, "pinned": pinned}, fh, indent=1)
    with open(os.path.join(out_dir, "control.txt"), "w") as fh:
        fh.write("\n".join(log) + "\n")
    print("%-8s %8s %8s %8s %10s" % ("P", "smid", "attr", "torch", "bf16 TF/s"))
    for r in rows:
        print("%-8s %8s %8s %8s %10s" % (r.get("percentage"), r.get("smidSms"), r.get("attrSms"), r.get("torchSms"), r.get("bf16Tflops", r.get("error", "")[:60])))


MPS = shutil.which("nvidia-cuda-mps-control") or "/usr/local/nvidia/bin/nvidia-cuda-mps-control"

if __name__ == "__main__":
    if "--client" in sys.argv:
        client()
    else:
        main()
