"""gpu-cosplay: several cosplayed devices in one session (`gpu-cosplay up GPU --count N`).

GPU_COSPLAY_RANKS lists the session's devices in ordinal order: `[{"uuid": "MIG-...", "mpsPipe": "/run/.../pipe"}]`.
A CUDA process enumerates one MIG device (and a GPU cannot be listed twice for MPS shares of it), so each process is
narrowed to its own device before CUDA starts in it: CUDA_VISIBLE_DEVICES and CUDA_MPS_PIPE_DIRECTORY name that
rank's device and daemon, and the ordinals the program names are mapped onto the one device it sees (cuda:i -> cuda:0
on rank i; gpu_cosplay_ranks_torch does it for torch). Which rank a process is: LOCAL_RANK (torchrun, accelerate,
deepspeed), else the first device index the program names before CUDA starts (`set_device(i)`,
`torch.cuda.device(i)`, `device="cuda:i"`, as `mp.spawn` scripts do), else a rank an ancestor chose (GPU_COSPLAY_RANK,
inherited), else rank 0 once CUDA starts (a real machine's default device). An inherited rank is only a guess until
then: mp.spawn's workers inherit the parent's rank when the parent touched CUDA, and name their own. Naming another
rank's device once the rank is settled is an error that says so, never work silently on the wrong slice.

Standard library only; never raises out of `parse` (a broken costume must not break an interpreter).
"""
import json
import os

RANKS_VAR = "GPU_COSPLAY_RANKS"
# set once a process has chosen: a child it starts (a DataLoader worker, a subprocess) stays on its device
RANK_VAR = "GPU_COSPLAY_RANK"


class OtherRanksDevice(RuntimeError):
    pass


# how a rank was chosen, for the error that refuses another rank's device
CHOSEN_BY = {"LOCAL_RANK": "LOCAL_RANK", "named": "the first device it named", "inherited": "its parent's rank",
             "default": "default: CUDA started before it named a device"}


class Ranks(object):
    """The session's devices and the one this process uses (None until chosen)."""

    def __init__(self, devices):
        self.devices = devices
        self.rank = None
        self.how = None  # a key of CHOSEN_BY
        # False while the rank may still change: none chosen yet, or only inherited (CUDA has not started here)
        self.settled = False

    @property
    def count(self):
        return len(self.devices)

    def choose(self, rank, environ=None, how="named", settled=True):
        """Narrows this process (and its children) to `rank`'s device; once settled another rank is refused."""
        environ = os.environ if environ is None else environ
        if self.settled:
            if rank != self.rank:
                raise OtherRanksDevice(self.other_device_message(rank))
            return
        if not 0 <= rank < self.count:
            raise OtherRanksDevice("cuda:%d: this session has %d devices (cuda:0 to cuda:%d)" % (rank, self.count, self.count - 1))
        device = self.devices[rank]
        environ["CUDA_VISIBLE_DEVICES"] = device["uuid"]
        if device.get("mpsPipe"):
            environ["CUDA_MPS_PIPE_DIRECTORY"] = device["mpsPipe"]
            environ["CUDA_MPS_LOG_DIRECTORY"] = os.path.join(os.path.dirname(device["mpsPipe"]), "log")
        environ[RANK_VAR] = str(rank)
        self.rank, self.how, self.settled = rank, how, settled

    def settle(self, environ=None):
        """CUDA is starting in this process (it reads CUDA_VISIBLE_DEVICES now): the rank chosen so far stays, and a
        process that chose none is rank 0, a real machine's default device."""
        if self.settled:
            return
        if self.rank is None:
            self.choose(0, environ, how="default")
        else:
            self.settled = True

    def local_index(self, ordinal, strict=True, cuda_started=False):
        """The index this process's CUDA knows for the session's `ordinal`: 0, its own device. Before the rank is
        settled the first ordinal named chooses it (unless CUDA has started: then it settles first). `strict` False
        also lets 0 through on any rank: torch hands the real index back (tensor.device is cuda:0 on every rank), and
        an int or a torch.device may be that; a "cuda:i" string or set_device(i) is what a script writes."""
        if not self.settled:
            if cuda_started:
                self.settle()
            else:
                self.choose(ordinal)
        if ordinal == self.rank or (ordinal == 0 and not strict):
            return 0
        raise OtherRanksDevice(self.other_device_message(ordinal))

    def other_device_message(self, asked):
        if not 0 <= asked < self.count:
            return "cuda:%d: this session has %d devices (cuda:0 to cuda:%d)" % (asked, self.count, self.count - 1)
        return other_device_message(asked, self.rank, CHOSEN_BY.get(self.how, self.how))

    def describe(self):
        """What the costume decided, for verify and the tests."""
        device = self.devices[self.rank] if self.rank is not None else None
        return {"count": self.count, "rank": self.rank, "uuid": device and device["uuid"], "mpsPipe": device and device.get("mpsPipe")}


def other_device_message(asked, own, how=None):
    return ("cuda:%d is rank %d's device; this process is rank %d (cuda:%d%s). In a gpu-cosplay session each process "
            "reaches one cosplayed GPU: start one process per device (torchrun --nproc_per_node, "
            "torch.multiprocessing.spawn)" % (asked, asked, own, own, ", chosen by %s" % how if how else ""))


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
    """Narrows at interpreter start where the environment says which rank: LOCAL_RANK settles it, an inherited
    GPU_COSPLAY_RANK is a guess the program may still change. Returns why a LOCAL_RANK was not used, else None."""
    environ = os.environ if environ is None else environ
    local = environ.get("LOCAL_RANK", "").strip()
    why = None
    if local:
        if local.isdigit() and int(local) < ranks.count:
            ranks.choose(int(local), environ, how="LOCAL_RANK")
            return None
        why = "LOCAL_RANK=%s is not one of the session's %d devices" % (local, ranks.count)
    inherited = environ.get(RANK_VAR, "")
    if inherited.isdigit() and int(inherited) < ranks.count:
        ranks.choose(int(inherited), environ, how="inherited", settled=False)
    return why


def nccl_env(nccl_version, environ=None):
    """NCCL 2.30+ runs several ranks on one GPU when asked (NCCL_MULTI_RANK_GPU_ENABLE); older NCCL refuses them, and
    gloo is what works there. A value the user set is kept. Returns what was set."""
    environ = os.environ if environ is None else environ
    if nccl_version is None or tuple(nccl_version)[:2] < (2, 30) or "NCCL_MULTI_RANK_GPU_ENABLE" in environ:
        return {}
    environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
    return {"NCCL_MULTI_RANK_GPU_ENABLE": "1"}


def nccl_version_tuple(value):
    """torch._C._nccl_version()'s value (an int packed as torch 1.x or 2.x packs it, or a tuple) as (major, minor,
    patch); None for anything else."""
    try:
        if isinstance(value, (tuple, list)):
            return tuple(int(x) for x in value[:3])
        v = int(value)
        if v > 0xFFFFFFFF:  # (major << 32) | (minor << 16) | patch, as torch.cuda.nccl.version() decodes it
            return (v >> 32, (v >> 16) & 0xFFFF, v & 0xFFFF)
        if v >= 20900:  # NCCL_VERSION_CODE from 2.9: major * 10000 + minor * 100 + patch
            return (v // 10000, (v // 100) % 100, v % 100)
        return (v // 1000, (v // 100) % 10, v % 100) if v > 0 else None
    except (TypeError, ValueError):
        return None
