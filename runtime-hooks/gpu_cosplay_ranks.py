"""gpu-cosplay: several cosplayed devices in one session (`gpu-cosplay up GPU --count N`).

GPU_COSPLAY_RANKS lists the session's devices in ordinal order: `[{"uuid": "MIG-...", "mpsPipe": "/run/.../pipe"}]`.
A CUDA process enumerates one MIG device (and a GPU cannot be listed twice for MPS shares of it), so each process is
narrowed to its own device before CUDA starts in it: CUDA_VISIBLE_DEVICES and CUDA_MPS_PIPE_DIRECTORY name that
rank's device and daemon, and the ordinals the program names are mapped onto the one device it sees (cuda:i -> cuda:0
on rank i). Which rank a process is: LOCAL_RANK (torchrun, accelerate, deepspeed), else a rank an ancestor chose
(GPU_COSPLAY_RANK, inherited), else the first device index the program names (`set_device(i)`, `torch.cuda.device(i)`,
as `mp.spawn` scripts do), else rank 0 once CUDA starts (a real machine's default device). Naming another rank's
device is an error that says so, never work silently on the wrong slice.

Standard library only; never raises out of `narrow` or `describe` (a broken costume must not break an interpreter).
"""
import json
import os

RANKS_VAR = "GPU_COSPLAY_RANKS"
# set once a process has chosen: a child it starts (a DataLoader worker, a subprocess) stays on its device
RANK_VAR = "GPU_COSPLAY_RANK"


class OtherRanksDevice(RuntimeError):
    pass


class Ranks(object):
    """The session's devices and the one this process uses (None until chosen)."""

    def __init__(self, devices):
        self.devices = devices
        self.rank = None

    @property
    def count(self):
        return len(self.devices)

    def choose(self, rank, environ=None):
        """Narrows this process (and its children) to `rank`'s device; a second choice of another rank is refused."""
        environ = os.environ if environ is None else environ
        if self.rank is not None:
            if rank != self.rank:
                raise OtherRanksDevice(other_device_message(rank, self.rank))
            return
        if not 0 <= rank < self.count:
            raise OtherRanksDevice("cuda:%d: this session has %d devices (cuda:0 to cuda:%d)" % (rank, self.count, self.count - 1))
        device = self.devices[rank]
        environ["CUDA_VISIBLE_DEVICES"] = device["uuid"]
        if device.get("mpsPipe"):
            environ["CUDA_MPS_PIPE_DIRECTORY"] = device["mpsPipe"]
            environ["CUDA_MPS_LOG_DIRECTORY"] = os.path.join(os.path.dirname(device["mpsPipe"]), "log")
        environ[RANK_VAR] = str(rank)
        self.rank = rank

    def local_index(self, ordinal):
        """The ordinal this process's CUDA knows for the session's `ordinal` (0, its own), choosing if none was."""
        if self.rank is None:
            self.choose(ordinal)
        if ordinal != self.rank:
            raise OtherRanksDevice(other_device_message(ordinal, self.rank))
        return 0

    def describe(self):
        """What the costume decided, for verify and the tests."""
        device = self.devices[self.rank] if self.rank is not None else None
        return {"count": self.count, "rank": self.rank, "uuid": device and device["uuid"], "mpsPipe": device and device.get("mpsPipe")}


def other_device_message(asked, own):
    return ("cuda:%d is rank %d's device; this process is rank %d (cuda:%d). In a gpu-cosplay session each process reaches "
            "one cosplayed GPU: start one process per device (torchrun --nproc_per_node, torch.multiprocessing.spawn)"
            % (asked, asked, own, own))


def parse(environ=None):
    """(Ranks, None) for a session of two or more devices; (None, None) for one; (None, why) when the variable is bad."""
    environ = os.environ if environ is None else environ
    raw = environ.get(RANKS_VAR, "")
    if not raw.strip():
        return None, None
    try:
        devices = json.loads(raw)
        if not isinstance(devices, list) or not all(isinstance(d, dict) and isinstance(d.get("uuid"), str) and d["uuid"] for d in devices):
            raise ValueError("not a list of {uuid, mpsPipe}")
        for d in devices:
            if d.get("mpsPipe") is not None and not isinstance(d.get("mpsPipe"), str):
                raise ValueError("mpsPipe is not a path")
    except ValueError as exc:
        return None, "%s: %s" % (RANKS_VAR, exc)
    if len(devices) < 2:
        return None, None
    return Ranks([{"uuid": d["uuid"], "mpsPipe": d.get("mpsPipe") or None} for d in devices]), None


def initial_rank(ranks, environ=None):
    """The rank a launcher or an ancestor named: LOCAL_RANK, else GPU_COSPLAY_RANK; None when neither is usable."""
    environ = os.environ if environ is None else environ
    for name in ("LOCAL_RANK", RANK_VAR):
        value = environ.get(name, "")
        if value.isdigit() and int(value) < ranks.count:
            return int(value)
    return None


def nccl_env(nccl_version, environ=None):
    """NCCL 2.30+ runs several ranks on one GPU when asked (NCCL_MULTI_RANK_GPU_ENABLE); older NCCL refuses them, and
    gloo is what works there. A value the user set is kept. Returns what was set."""
    environ = os.environ if environ is None else environ
    if nccl_version is None or tuple(nccl_version)[:2] < (2, 30) or "NCCL_MULTI_RANK_GPU_ENABLE" in environ:
        return {}
    environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
    return {"NCCL_MULTI_RANK_GPU_ENABLE": "1"}


def ordinal_of(device, current=None):
    """The CUDA ordinal a device argument names (int, "cuda:1", torch.device("cuda", 1)); None when it names none."""
    if device is None:
        return current
    if isinstance(device, bool):
        return None
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if kind != "cuda":
            return None
        return int(index) if index.isdigit() else current
    kind = getattr(device, "type", None)
    if kind != "cuda":
        return None
    index = getattr(device, "index", None)
    return current if index is None else int(index)
