#!/usr/bin/env python3
"""gpu-cosplay verify --distributed: a smoke test of a session of several devices (up GPU --count N), run inside it.

Starts one process per device with torch's own launcher (`python3 -m torch.distributed.run --nproc_per_node N`),
each of which sets its device as a script for N real cards would (`torch.cuda.set_device(LOCAL_RANK)`), joins the
process group, times an all-reduce and one DistributedDataParallel step on a tiny model, and says which device the
costume gave it. NCCL where torch has CUDA and an NCCL that runs several ranks on one GPU or on MIG instances
(2.30 and later), gloo otherwise, and why.

Prints one JSON object (--json; otherwise a few lines of text):
  {"ok": bool, "error": str|null, "backend": "nccl"|"gloo", "why": str, "kind": "cuda"|"cpu", "nccl": "2.x.y"|null,
   "torch": str, "count": N,
   "ranks": [{"rank": int, "device": str, "uuid": str|null, "mpsPipe": str|null, "deviceCount": int|null,
              "memoryLimitMiB": int|null, "allReduce": {"bytes": int, "ms": float, "busGBs": float},
              "ddpStepMs": float, "ok": bool, "error": str|null}]}
Exit 0 when every rank did both, 1 otherwise (2: nothing to test, e.g. one device or no torch).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ALL_REDUCE_FLOATS = 4 * 1024 * 1024  # 16 MiB of float32
ITERATIONS = 5
MULTI_RANK_NCCL = (2, 30)


def nccl_version(torch):
    try:
        v = torch.cuda.nccl.version()
        return tuple(v) if isinstance(v, (tuple, list)) else (v // 1000, (v // 100) % 10, v % 100)
    except Exception:
        return None


def choose_backend(torch):
    """(backend, why, kind)"""
    if not torch.cuda.is_available():
        return "gloo", "torch has no CUDA here: gloo on the CPU", "cpu"
    v = nccl_version(torch)
    if v is None:
        return "gloo", "this torch has no NCCL", "cuda"
    if v[:2] < MULTI_RANK_NCCL:
        return "gloo", "NCCL %s refuses several ranks on MIG instances or MPS clients of one GPU (2.30 and later run them)" % ".".join(map(str, v)), "cuda"
    return "nccl", "NCCL %s runs several ranks on one GPU or its MIG instances" % ".".join(map(str, v)), "cuda"


def worker(out_dir):
    """One rank, as torchrun starts it."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    record = {"rank": rank, "device": None, "uuid": None, "mpsPipe": None, "deviceCount": None, "memoryLimitMiB": None,
              "allReduce": None, "ddpStepMs": None, "ok": False, "error": None}
    try:
        backend, _why, kind = choose_backend(torch)
        if kind == "cuda":
            torch.cuda.set_device(local)  # what a script for N real cards does: the costume maps it onto this rank's slice
            device = torch.device("cuda", local)
            record["device"] = torch.cuda.get_device_name(local)
            record["deviceCount"] = torch.cuda.device_count()
            record["memoryLimitMiB"] = int(torch.cuda.mem_get_info(local)[1] // (1024 * 1024))
        else:
            # what the script would do on the real machine; a torch without CUDA refuses it (AssertionError, or 1.13's
            # AttributeError for torch._C._cuda_setDevice) after the costume agreed; another rank's device would not pass
            try:
                torch.cuda.set_device(local)
            except (AssertionError, AttributeError):
                pass
            device = torch.device("cpu")
            record["device"] = "cpu (the costume: %s)" % os.environ.get("GPU_COSPLAY_NAME", "none")
            cap = os.environ.get("GPU_COSPLAY_ALLOC_CAP_MIB") or os.environ.get("GPU_COSPLAY_CUDA_TOTAL_MIB")
            record["memoryLimitMiB"] = int(cap) if cap and cap.isdigit() else None
        costume = _costume()
        if costume is not None:
            record["uuid"], record["mpsPipe"] = costume.get("uuid"), costume.get("mpsPipe")
        dist.init_process_group(backend)
        world = dist.get_world_size()
        x = torch.ones(ALL_REDUCE_FLOATS, dtype=torch.float32, device=device)
        dist.all_reduce(x)
        if abs(float(x[0]) - world) > 1e-6:
            raise RuntimeError("all_reduce summed to %s, not %d" % (float(x[0]), world))
        _sync(torch, kind)
        start = time.perf_counter()
        for _ in range(ITERATIONS):
            dist.all_reduce(x)
        _sync(torch, kind)
        seconds = (time.perf_counter() - start) / ITERATIONS
        nbytes = x.numel() * x.element_size()
        record["allReduce"] = {"bytes": nbytes, "ms": round(seconds * 1e3, 3),
                               "busGBs": round(2.0 * (world - 1) / world * nbytes / seconds / 1e9, 3)}
        model = torch.nn.Linear(64, 64).to(device)
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local] if kind == "cuda" else None)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        start = time.perf_counter()
        loss = ddp(torch.randn(32, 64, device=device)).square().mean()
        loss.backward()
        optimizer.step()
        _sync(torch, kind)
        record["ddpStepMs"] = round((time.perf_counter() - start) * 1e3, 3)
        # the step left every rank with the same weights
        weights = [p.detach().clone() for p in model.parameters()]
        for w in weights:
            first = w.clone()
            dist.broadcast(first, 0)
            if not torch.equal(first, w):
                raise RuntimeError("the DDP step left rank %d with other weights than rank 0" % rank)
        record["ok"] = True
        dist.destroy_process_group()
    except Exception as exc:
        record["error"] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
    with open(os.path.join(out_dir, "rank-%d.json" % rank), "w") as f:
        json.dump(record, f)
    return 0 if record["ok"] else 1


def _sync(torch, kind):
    if kind == "cuda":
        torch.cuda.synchronize()


def _costume():
    try:
        import gpu_cosplay_hook
        st = gpu_cosplay_hook.state()
        return st.ranks.describe() if st is not None and st.ranks is not None else None
    except Exception:
        return None


def count_of():
    try:
        devices = json.loads(os.environ.get("GPU_COSPLAY_RANKS", "") or "[]")
        return len(devices) if isinstance(devices, list) else 0
    except ValueError:
        return 0


def launch(as_json):
    report = {"ok": False, "error": None, "backend": None, "why": None, "kind": None, "nccl": None, "torch": None,
              "count": count_of(), "ranks": []}
    try:
        import torch
    except Exception as exc:
        report["error"] = "no torch in this session (%s): install it, or use an image that has it (up --image)" % exc
        return emit(report, as_json, 2)
    report["torch"] = torch.__version__
    v = nccl_version(torch) if torch.cuda.is_available() else None
    report["nccl"] = ".".join(map(str, v)) if v else None
    report["backend"], report["why"], report["kind"] = choose_backend(torch)
    if report["count"] < 2:
        report["error"] = "this session has one device: bring one up with several (gpu-cosplay up GPU --count 2)"
        return emit(report, as_json, 2)
    out_dir = tempfile.mkdtemp(prefix="gpu-cosplay-distributed-")
    # --redirects/--tee 1 (the workers' stdout to the launcher's log, and shown): torch 1.13's default "0" cannot be
    # parsed on Python 3.11 (Debian bookworm's torch), where iterating an IntFlag skips its 0 member
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(report["count"]),
            "--redirects", "1", "--tee", "1", os.path.abspath(__file__), "--worker", out_dir]
    try:
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        report["error"] = "the ranks did not finish in 300 s (a collective that hangs?)"
        return emit(report, as_json, 1)
    for name in sorted(os.listdir(out_dir)):
        with open(os.path.join(out_dir, name)) as f:
            report["ranks"].append(json.load(f))
    report["ranks"].sort(key=lambda r: r["rank"])
    report["ok"] = ran.returncode == 0 and len(report["ranks"]) == report["count"] and all(r["ok"] for r in report["ranks"])
    if not report["ok"] and not any(r["error"] for r in report["ranks"]):
        report["error"] = "torch.distributed.run exited %d: %s" % (ran.returncode, (ran.stderr.strip().splitlines() or [""])[-1])
    return emit(report, as_json, 0 if report["ok"] else 1)


def emit(report, as_json, code):
    if as_json:
        print(json.dumps(report))
    else:
        print("backend %s: %s" % (report["backend"], report["why"]))
        for r in report["ranks"]:
            print("rank %d: %s %s, %s MiB, all-reduce %s, DDP step %s ms%s" % (
                r["rank"], r["device"], r["uuid"], r["memoryLimitMiB"], r["allReduce"], r["ddpStepMs"], "" if r["ok"] else " FAILED: %s" % r["error"]))
        if report["error"]:
            print("error: %s" % report["error"])
    return code


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2]))
    sys.exit(launch("--json" in sys.argv[1:]))
