"""gpu-cosplay interpreter hook, loaded from gpu_cosplay.pth at every interpreter start.

Rules this module lives by:
- it never lets an exception escape (a broken hook must not break an interpreter);
- it does nothing at all unless the env contract is present (GPU_COSPLAY_NAME + a VRAM figure);
- it is cheap: at start-up it only installs a meta-path finder; torch and pynvml are patched when the
  program itself imports them;
- it is idempotent: loading it twice (two .pth files, a reload) patches once.

See README.md in this folder for what gets patched and why.
"""

import os
import sys

_MARK = "__gpu_cosplay_wrapped__"
_STATE_ATTR = "_gpu_cosplay_hook_state"  # kept on the sys module so a reload sees it
_WATCH = ("torch", "pynvml")
_ALLOC_CONF_MIN_TORCH = (2, 10)  # first release with per_process_memory_fraction in the allocator config


def _fault(where):
    """Fault injection for the test-suite: GPU_COSPLAY_HOOK_FAULT=install|torch|pynvml|lazy."""
    if os.environ.get("GPU_COSPLAY_HOOK_FAULT") == where:
        raise RuntimeError("gpu-cosplay hook: injected fault at %s" % where)


def _debug(msg):
    if os.environ.get("GPU_COSPLAY_DEBUG"):
        try:
            sys.stderr.write("[gpu-cosplay] %s\n" % (msg,))
        except Exception:
            pass


class _State(object):
    def __init__(self, contract):
        self.contract = contract
        self.finder = None
        self.torch_patched = False
        self.pynvml_patched = False
        self.cuda_post_init_done = False
        self.phys_total = {}  # device index -> physical total bytes, captured before patching
        self.fraction = {}  # device index -> fraction applied
        self.orig = {}
        self.errors = []
        self.report_written = False
        self.alloc_conf = None
        self.ranks = None  # up --count N: gpu_cosplay_ranks.Ranks; None for one device
        self.other_rank = None  # with ranks, once torch is patched: device -> another rank's ordinal, else None


def state():
    """The hook's state (None when the hook is inactive). Used by verify.py."""
    return getattr(sys, _STATE_ATTR, None)


def _note_error(where, exc):
    st = state()
    if st is not None:
        try:
            st.errors.append("%s: %s: %s" % (where, type(exc).__name__, exc))
        except Exception:
            pass
    _debug("error in %s: %r" % (where, exc))


# --------------------------------------------------------------------------------------------- import hook

class _LoaderProxy(object):
    """Wraps the real loader of a watched module; after the module executes, patches it."""

    def __init__(self, loader, fullname):
        self._loader = loader
        self._fullname = fullname

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        try:
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self._loader
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self._loader
        except Exception:
            pass
        if self._fullname == "torch":
            _before_torch(spec)
        self._loader.exec_module(module)
        _after_import(self._fullname, module)


class _Finder(object):
    _gpu_cosplay = True

    def __init__(self):
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _WATCH or fullname in self._busy:
            return None
        st = state()
        if st is None:
            return None
        if (fullname == "torch" and st.torch_patched) or (fullname == "pynvml" and st.pynvml_patched):
            return None
        self._busy.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or getattr(finder, "_gpu_cosplay", False):
                    continue
                fs = getattr(finder, "find_spec", None)
                if fs is None:
                    continue
                spec = fs(fullname, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            spec.loader = _LoaderProxy(spec.loader, fullname)
            return spec
        except Exception as exc:  # never break an import: let the normal machinery do it
            _note_error("find_spec", exc)
            return None
        finally:
            self._busy.discard(fullname)

    # Python 2 style API some tools poke at
    def invalidate_caches(self):
        pass


def _after_import(fullname, module):
    try:
        if fullname == "torch":
            patch_torch(module)
        elif fullname == "pynvml":
            patch_pynvml(module)
    except Exception as exc:
        _note_error("patch " + fullname, exc)


# --------------------------------------------------------------------------------------------- torch

def _version_tuple(text):
    out = []
    for part in str(text).split("+")[0].split("."):
        digits = ""
        for ch in part:
            if ch.isdigit():
                digits += ch
            else:
                break
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def _torch_version_from_spec(spec):
    """Read torch/version.py without importing torch."""
    try:
        locs = getattr(spec, "submodule_search_locations", None) or []
        for loc in locs:
            path = os.path.join(loc, "version.py")
            if os.path.isfile(path):
                with open(path) as fh:
                    for line in fh:
                        if line.startswith("__version__"):
                            return line.split("=", 1)[1].strip().strip("'\"")
    except Exception:
        pass
    return None


def alloc_conf_value(existing, fraction):
    """Append per_process_memory_fraction to an allocator config string unless the user set it."""
    existing = (existing or "").strip()
    if "per_process_memory_fraction" in existing:
        return existing
    item = "per_process_memory_fraction:%.4f" % fraction
    if not existing:
        return item
    return existing.rstrip(",") + "," + item


def _before_torch(spec):
    """Runs just before torch executes: set the allocator config where this torch version knows the key
    (older versions reject unknown keys, so the key is only added from torch 2.10 on)."""
    try:
        st = state()
        if st is None or st.torch_patched:
            return
        c = st.contract
        if not c.phys_vram_mib:
            return
        ver = _version_tuple(_torch_version_from_spec(spec) or "")
        if not ver or ver[:2] < _ALLOC_CONF_MIN_TORCH:
            return
        import gpu_cosplay_env
        frac = gpu_cosplay_env.mem_fraction(c.alloc_cap_mib, c.phys_vram_mib)
        if frac is None or frac >= 1.0:
            return
        # PYTORCH_ALLOC_CONF is the newer name; extend whichever the user set, else the classic one.
        key = "PYTORCH_ALLOC_CONF" if os.environ.get("PYTORCH_ALLOC_CONF") else "PYTORCH_CUDA_ALLOC_CONF"
        os.environ[key] = alloc_conf_value(os.environ.get(key), frac)
        st.alloc_conf = key + "=" + os.environ[key]
    except Exception as exc:
        _note_error("alloc_conf", exc)


def _wrapped(fn):
    return getattr(fn, _MARK, False)


def _mark(fn, orig):
    try:
        setattr(fn, _MARK, True)
        fn.__wrapped__ = orig
        fn.__name__ = getattr(orig, "__name__", fn.__name__)
        fn.__doc__ = getattr(orig, "__doc__", None)
    except Exception:
        pass
    return fn


def _replace_everywhere(prefix, name, orig, new):
    """Replace attribute `name` that is `orig` in every loaded module under `prefix` (torch.cuda binds
    some helpers into submodules with `from . import x`)."""
    for modname, mod in list(sys.modules.items()):
        if mod is None or not (modname == prefix or modname.startswith(prefix + ".")):
            continue
        try:
            if getattr(mod, name, None) is orig:
                setattr(mod, name, new)
        except Exception:
            pass


class _DevicePropsProxy(object):
    """Stands in for torch's _CudaDeviceProperties: name and total_memory are the target's."""

    __slots__ = ("_real", "_name", "_total")

    def __init__(self, real, name, total):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_total", total)

    @property
    def __class__(self):  # isinstance(p, torch._C._CudaDeviceProperties) keeps working
        return type(object.__getattribute__(self, "_real"))

    @property
    def name(self):
        return self._name

    @property
    def total_memory(self):
        return self._total

    def __getattr__(self, attr):
        return getattr(object.__getattribute__(self, "_real"), attr)

    def __setattr__(self, attr, value):
        raise AttributeError("can't set attribute")

    def __dir__(self):
        return dir(self._real)

    def __repr__(self):
        import re
        text = repr(self._real)
        text = re.sub(r"name='[^']*'", "name='%s'" % self._name.replace("'", ""), text, count=1)
        text = re.sub(r"total_memory=\d+MB", "total_memory=%dMB" % (self._total // (1024 * 1024)), text,
                      count=1)
        return text

    __str__ = __repr__


def _device_index(torch, device):
    try:
        if device is None:
            return torch.cuda.current_device()
        if isinstance(device, int):
            return device
        if isinstance(device, str):
            device = torch.device(device)
        idx = getattr(device, "index", None)
        if idx is None:
            return torch.cuda.current_device()
        return int(idx)
    except Exception:
        return 0


def _phys_for(st, idx):
    """The physical total behind ordinal idx: with several ranks every ordinal a process may use is its one device."""
    return st.phys_total.get(0 if st.ranks is not None else idx)


def _cap_for(st, idx):
    """What torch's allocator may hold on device idx (bytes): the costume's cap, never more than the physical memory.
    Under MPS it is the pinned limit, so the hook never lets through more than the driver's hard limit."""
    cap = st.contract.alloc_cap_bytes
    phys = _phys_for(st, idx)
    if phys:
        return min(cap, phys)
    return cap


def _total_for(st, idx):
    """What CUDA reports as the total on the card (bytes), its VRAM less the driver's reserve; never above physical."""
    total = st.contract.cuda_total_bytes
    phys = _phys_for(st, idx)
    if phys:
        return min(total, phys)
    return total


def _cuda_post_init(torch):
    """Runs once when torch's CUDA comes up: capture physical totals, apply the allocator cap."""
    st = state()
    if st is None or st.cuda_post_init_done:
        return
    st.cuda_post_init_done = True
    try:
        _fault("lazy")
        get_props = st.orig.get("get_device_properties") or torch.cuda.get_device_properties
        set_frac = st.orig.get("set_per_process_memory_fraction") or torch.cuda.set_per_process_memory_fraction
        # the devices this process really sees (with several ranks, its own one; device_count() says the session's)
        count = (st.orig.get("device_count") or torch.cuda.device_count)()
        for idx in range(count):
            try:
                phys = int(get_props(idx).total_memory)
                st.phys_total[idx] = phys
                cap = st.contract.alloc_cap_bytes
                if phys > 0 and cap < phys:
                    frac = cap / float(phys)
                    set_frac(frac, idx)
                    st.fraction[idx] = frac
            except Exception as exc:
                _note_error("set fraction dev %d" % idx, exc)
        if st.ranks is not None:
            # torch's seeding and RNG state index the generators by current_device() and range(device_count()), which
            # say the session's ordinals: every one of them is this process's one generator
            gens = getattr(torch.cuda, "default_generators", None)
            if isinstance(gens, tuple) and len(gens) == 1:
                torch.cuda.default_generators = gens * st.ranks.count
    except Exception as exc:
        _note_error("cuda post-init", exc)


def _install_lazy_hook(torch):
    cuda = torch.cuda
    st = state()

    def _post():
        try:
            _cuda_post_init(torch)
        except Exception as exc:
            _note_error("post-init", exc)

    lazy_call = getattr(cuda, "_lazy_call", None)
    if lazy_call is not None:
        # torch runs queued calls inside _lazy_init (device count is known by then), or now if CUDA is up.
        try:
            lazy_call(_post)
            return
        except Exception as exc:
            _note_error("_lazy_call", exc)
    orig = getattr(cuda, "_lazy_init", None)
    if orig is None or _wrapped(orig):
        return

    def _lazy_init(*a, **kw):
        out = orig(*a, **kw)
        try:
            if cuda.is_initialized():
                _post()
        except Exception as exc:
            _note_error("lazy_init wrapper", exc)
        return out

    _mark(_lazy_init, orig)
    _replace_everywhere("torch.cuda", "_lazy_init", orig, _lazy_init)
    st.orig["_lazy_init"] = orig


def patch_torch(torch):
    st = state()
    if st is None or st.torch_patched:
        return
    st.torch_patched = True
    _fault("torch")
    c = st.contract
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        return

    def wrap(modprefix, owner, name, make):
        orig = getattr(owner, name, None)
        if orig is None or _wrapped(orig):
            return
        try:
            new = _mark(make(orig), orig)
            st.orig[name] = orig
            setattr(owner, name, new)
            _replace_everywhere(modprefix, name, orig, new)
        except Exception as exc:
            _note_error("wrap " + name, exc)

    def other_rank(device):
        # several ranks: another rank's ordinal (any, before this process's rank settles) is answered without the
        # driver, as the costume of a card this process cannot reach; None otherwise
        return st.other_rank(device) if st.other_rank is not None else None

    def make_get_device_name(orig):
        def get_device_name(device=None):
            if other_rank(device) is None:
                orig(device)  # keep the original's errors (no CUDA, bad index)
            return c.name
        return get_device_name

    def make_get_device_properties(orig):
        def get_device_properties(device=None):
            other = other_rank(device)
            if other is not None:  # the shape of its own device's properties, under the costume
                st.ranks.settle()
                return _DevicePropsProxy(orig(st.ranks.rank), c.name, _total_for(st, other))
            real = orig(device)
            idx = _device_index(torch, device)
            return _DevicePropsProxy(real, c.name, _total_for(st, idx))
        return get_device_properties

    def _reserved(idx):
        try:
            return int(torch.cuda.memory_reserved(idx))
        except Exception:
            return 0

    def clip(free, total, idx):
        # free: what the driver has (under MPS, against the pinned limit) within what the allocator cap leaves;
        # total: what the card reports to CUDA
        cap = _cap_for(st, idx)
        free = int(free)
        used_by_us = _reserved(idx)
        return max(0, min(free, cap - used_by_us)), _total_for(st, idx)

    def make_mem_get_info(orig):
        def mem_get_info(device=None):
            other = other_rank(device)
            if other is not None:  # another rank's slice is out of this process's reach: as if nothing used it
                return _cap_for(st, other), _total_for(st, other)
            free, total = orig(device)
            if not st.phys_total:
                _cuda_post_init(torch)
            return clip(free, total, _device_index(torch, device))
        return mem_get_info

    def make_set_fraction(orig):
        def set_per_process_memory_fraction(fraction, device=None):
            # The user thinks in target memory: a fraction of what the card reports, never past the allocator cap.
            idx = _device_index(torch, device)
            phys = _phys_for(st, idx)
            if phys:
                fraction = min(float(fraction) * _total_for(st, idx), _cap_for(st, idx)) / float(phys)
            return orig(fraction, device)
        return set_per_process_memory_fraction

    def make_bf16(orig):
        def is_bf16_supported(*a, **kw):
            return False
        return is_bf16_supported

    wrap("torch.cuda", cuda, "get_device_name", make_get_device_name)
    wrap("torch.cuda", cuda, "get_device_properties", make_get_device_properties)
    wrap("torch.cuda", cuda, "mem_get_info", make_mem_get_info)
    wrap("torch.cuda", cuda, "set_per_process_memory_fraction", make_set_fraction)
    if not c.has_bf16:
        wrap("torch.cuda", cuda, "is_bf16_supported", make_bf16)

    acc = getattr(torch, "accelerator", None)
    if acc is not None and getattr(acc, "get_memory_info", None) is not None:
        def make_acc_mem(orig):
            def get_memory_info(device_index=None, *a, **kw):
                free, total = orig(device_index, *a, **kw)
                try:
                    if not torch.cuda.is_available():
                        return free, total
                except Exception:
                    return free, total
                if not st.phys_total:
                    _cuda_post_init(torch)
                return clip(free, total, _device_index(torch, device_index))
            return get_memory_info
        wrap("torch.accelerator", acc, "get_memory_info", make_acc_mem)

    if not c.has_tf32:
        try:
            torch.backends.cuda.matmul.allow_tf32 = False
        except Exception as exc:
            _note_error("tf32 matmul", exc)
        try:
            torch.backends.cudnn.allow_tf32 = False
        except Exception as exc:
            _note_error("tf32 cudnn", exc)

    _install_lazy_hook(torch)
    if st.ranks is not None:
        try:
            _patch_torch_ranks(torch, st)
        except Exception as exc:
            _note_error("ranks torch", exc)
    try:
        import atexit
        atexit.register(write_fit_report)
    except Exception as exc:
        _note_error("atexit", exc)


def fit_record(torch=None):
    """The fit-report record for this process, or None when torch's CUDA was never used."""
    st = state()
    if st is None:
        return None
    torch = torch or sys.modules.get("torch")
    if torch is None:
        return None
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return None
    reserved = allocated = 0
    try:
        n = cuda.device_count()
    except Exception:
        n = 1
    for idx in range(max(1, n)):
        try:
            reserved = max(reserved, int(cuda.max_memory_reserved(idx)))
            allocated = max(allocated, int(cuda.max_memory_allocated(idx)))
        except Exception:
            pass
    import time
    c = st.contract
    return {
        "pid": os.getpid(),
        "argv": list(getattr(sys, "argv", []) or []),
        "peakReservedBytes": reserved,
        "peakAllocatedBytes": allocated,
        "capBytes": c.alloc_cap_bytes,
        "t": round(time.time(), 3),
        "card": c.card,
        "name": c.name,
        "session": c.session,
    }


def write_fit_report():
    """atexit: append one JSON line per process to $GPU_COSPLAY_REPORT_DIR/fit.jsonl. Never raises."""
    try:
        st = state()
        if st is None or st.report_written:
            return
        rec = fit_record()
        if rec is None:
            return
        st.report_written = True
        import json
        d = st.contract.report_dir
        os.makedirs(d, exist_ok=True)
        line = json.dumps(rec, sort_keys=True) + "\n"
        fd = os.open(os.path.join(d, "fit.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except BaseException as exc:
        _note_error("fit report", exc)


# --------------------------------------------------------------------------------------------- pynvml

def patch_pynvml(nv):
    st = state()
    if st is None or st.pynvml_patched:
        return
    st.pynvml_patched = True
    _fault("pynvml")
    c = st.contract
    cap = c.cap_bytes

    def wrap(name, make):
        orig = getattr(nv, name, None)
        if orig is None or _wrapped(orig):
            return
        try:
            setattr(nv, name, _mark(make(orig), orig))
            st.orig["pynvml." + name] = orig
        except Exception as exc:
            _note_error("wrap pynvml." + name, exc)

    def make_name(orig):
        def nvmlDeviceGetName(handle, *a, **kw):
            real = orig(handle, *a, **kw)
            if isinstance(real, bytes):
                return c.name.encode("utf-8")
            return c.name
        return nvmlDeviceGetName

    def make_mem(orig):
        def nvmlDeviceGetMemoryInfo(handle, *a, **kw):
            info = orig(handle, *a, **kw)
            try:
                reserved = int(getattr(info, "reserved", 0) or 0) if hasattr(info, "reserved") else None
                used = int(info.used)
                if reserved is None:  # v1: used includes what the driver reserved
                    used = min(used, cap)
                    info.total = cap
                    info.used = used
                    info.free = cap - used
                else:  # v2: total = reserved + used + free
                    reserved = min(reserved, cap)
                    used = min(used, cap - reserved)
                    info.total = cap
                    info.reserved = reserved
                    info.used = used
                    info.free = cap - reserved - used
            except Exception as exc:
                _note_error("pynvml memory", exc)
            return info
        return nvmlDeviceGetMemoryInfo

    wrap("nvmlDeviceGetName", make_name)
    wrap("nvmlDeviceGetMemoryInfo", make_mem)
    if st.ranks is not None:
        _patch_pynvml_ranks(nv, st.ranks.devices, wrap)

    # Under MPS the session's CUDA programs are MPS clients: NVML's compute list shows the MPS server, the clients
    # are in the MPS list. Tools that read only the compute list (gpustat, older nvitop) then see the clients too.
    mps_list = getattr(nv, "nvmlDeviceGetMPSComputeRunningProcesses", None)
    if os.environ.get("CUDA_MPS_PIPE_DIRECTORY") and mps_list is not None:
        def make_procs(orig):
            def compute_processes(handle, *a, **kw):
                listed = list(orig(handle, *a, **kw))
                try:
                    seen = set(p.pid for p in listed)
                    for p in mps_list(handle):
                        if p.pid not in seen:
                            listed.append(p)
                            seen.add(p.pid)
                except Exception as exc:
                    _note_error("pynvml MPS processes", exc)
                return listed
            return compute_processes

        for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v2",
                   "nvmlDeviceGetComputeRunningProcesses_v3"):
            wrap(fn, make_procs)

    if c.tdp_w:
        tdp_mw = int(round(c.tdp_w * 1000))

        def make_const(orig):
            def getter(handle, *a, **kw):
                return tdp_mw
            return getter

        def make_constraints(orig):
            def nvmlDeviceGetPowerManagementLimitConstraints(handle, *a, **kw):
                try:
                    lo, _hi = orig(handle, *a, **kw)
                    lo = min(int(lo), tdp_mw)
                except Exception:
                    lo = tdp_mw
                return [lo, tdp_mw]
            return nvmlDeviceGetPowerManagementLimitConstraints

        for fn in ("nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetPowerManagementDefaultLimit",
                   "nvmlDeviceGetEnforcedPowerLimit"):
            wrap(fn, make_const)
        wrap("nvmlDeviceGetPowerManagementLimitConstraints", make_constraints)


def _patch_pynvml_ranks(nv, devices, wrap):
    """Several cosplayed devices: NVML ignores CUDA_VISIBLE_DEVICES and counts the parent GPU(s), so the count is the
    session's N and index i is rank i's device, looked up by its uuid (a MIG uuid gives the MIG device's handle, whose
    memory is the slice's); where that lookup fails, the parent GPU stands in. Best effort: a tool that asks a MIG
    handle what only a whole GPU has (utilisation, clocks) gets NVML's NotSupported, as on MIG anyway."""
    by_uuid = getattr(nv, "nvmlDeviceGetHandleByUUID", None)

    def make_count(orig):
        def nvmlDeviceGetCount(*a, **kw):
            orig(*a, **kw)  # keep its errors (not initialised)
            return len(devices)
        return nvmlDeviceGetCount

    def make_by_index(orig):
        def nvmlDeviceGetHandleByIndex(index, *a, **kw):
            try:
                i = int(index)
            except Exception:
                return orig(index, *a, **kw)
            if not 0 <= i < len(devices):
                return orig(index, *a, **kw)
            uuid = devices[i]["uuid"]
            if by_uuid is not None:
                for arg in (uuid, uuid.encode()):  # older nvidia-ml-py hands it to a c_char_p: bytes only
                    try:
                        return by_uuid(arg)
                    except Exception as exc:
                        _debug("nvml handle of %s: %r" % (uuid, exc))
            return orig(0, *a, **kw)  # MIG slices of one GPU, or MPS shares of it: the parent GPU stands in
        return nvmlDeviceGetHandleByIndex

    wrap("nvmlDeviceGetCount", make_count)
    wrap("nvmlDeviceGetHandleByIndex", make_by_index)


# --------------------------------------------------------------------------------------------- ranks

def _narrow_to_rank(st):
    """up --count N: read the session's devices; a process a launcher named (LOCAL_RANK) is narrowed at once, one a
    parent narrowed (GPU_COSPLAY_RANK) provisionally. The torch mapping is imported now, while this folder is surely on
    sys.path (site/sitecustomize.py takes it off again)."""
    try:
        import gpu_cosplay_ranks
        ranks, why = gpu_cosplay_ranks.parse()
        if why:
            _note_error("ranks", ValueError(why))
        if ranks is None:
            return
        import gpu_cosplay_ranks_torch  # noqa: F401
        st.ranks = ranks
        why = gpu_cosplay_ranks.initial_rank(ranks)
        if why:
            _note_error("ranks", ValueError(why))
    except Exception as exc:
        _note_error("ranks", exc)


def _patch_torch_ranks(torch, st):
    """The ordinal mapping (gpu_cosplay_ranks_torch), and NCCL told to run several ranks on one GPU where it can."""
    import gpu_cosplay_ranks
    import gpu_cosplay_ranks_torch
    st.other_rank = gpu_cosplay_ranks_torch.patch(torch, st.ranks, st.orig, _replace_everywhere)
    try:
        gpu_cosplay_ranks.nccl_env(gpu_cosplay_ranks_torch.nccl_version(torch))
    except Exception as exc:
        _note_error("nccl version", exc)


# --------------------------------------------------------------------------------------------- install

def install():
    """Install the hook if the env contract is present. Idempotent. Never raises."""
    try:
        if not os.environ.get("GPU_COSPLAY_NAME"):
            return None
        st = getattr(sys, _STATE_ATTR, None)
        if st is None:
            _fault("install")
            import gpu_cosplay_env
            contract = gpu_cosplay_env.load()
            if contract is None:
                return None
            st = _State(contract)
            setattr(sys, _STATE_ATTR, st)
            _narrow_to_rank(st)
        if st.finder is None or st.finder not in sys.meta_path:
            existing = [f for f in sys.meta_path if getattr(f, "_gpu_cosplay", False)]
            if existing:
                st.finder = existing[0]
            else:
                st.finder = _Finder()
                sys.meta_path.insert(0, st.finder)
        # Imported before us (e.g. by sitecustomize)? Patch now.
        for name in _WATCH:
            mod = sys.modules.get(name)
            if mod is not None:
                _after_import(name, mod)
        return st
    except Exception as exc:
        _debug("install failed: %r" % (exc,))
        return None


install()
