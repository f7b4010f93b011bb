"""gpu-cosplay: torch with several cosplayed devices (GPU_COSPLAY_RANKS): the ordinals a script for N real cards names
are mapped onto the one device its process sees (cuda:k -> cuda:0 on rank k), and naming another rank's device is
refused (gpu_cosplay_ranks.OtherRanksDevice, a RuntimeError that says what to do).

Why wrapped entry points and not a torch.overrides.TorchFunctionMode: a mode would see the factories and Tensor.to /
.cuda in one place, but it puts Python dispatch in front of EVERY torch call, device or not, and its stack is
thread-local (a thread the program starts is not mapped). Measured with bench_ranks.py (npm run bench) on Debian's
CPU torch 1.13: a pass-through mode adds several microseconds to every op (`a + a` included), the wrappers a few
hundred nanoseconds to the wrapped calls only (README.md has the figures). The mode also misses
torch.cuda.set_device, torch.cuda.device and DDP's device_ids, which are not torch functions. What is wrapped:
- torch.cuda._utils._get_device_index, the device-argument funnel of torch.cuda's Python API (set_device,
  torch.cuda.device, memory stats, streams, mem_get_info, get_device_properties, torch.load's map_location), bound by
  name in the torch.cuda modules; and torch._utils._get_device_index where torch.nn.parallel bound it (DDP's
  device_ids, output_device);
- torch.cuda.set_device, current_device, device_count, is_available, _lazy_init (the rank settles before CUDA
  starts; device_count and is_available answer without the driver until then, since asking it starts CUDA);
- torch.Tensor.to / .cuda and the factories' device= (they go straight to C++; nn.Module.to and .cuda call them);
- torch.cuda.device's __enter__/__exit__ (torch 1.x sets and compares real indices there).
Which index is accepted where: the process's own ordinal k maps to 0; another rank's is refused. 0 is also accepted
from an int or a torch.device (torch hands real indices back: tensor.device is the real cuda:0, get_device() is 0);
a "cuda:i" string and set_device(i) are what a script writes, so there 0 on rank k != 0 is refused.

Not mapped: a torch.device object's own index as the program reads it back (0 on every rank), devices given to C++
functions other than the factories (tensor.new_zeros(device=), torch.Generator(device=), the device
torch.set_default_device's own mode hands to C++).
"""
import sys
import threading

import gpu_cosplay_ranks

MARK = "__gpu_cosplay_ranks__"
FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "range", "linspace",
             "logspace", "eye", "tensor", "as_tensor", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
             "randn_like", "randint_like", "empty_strided", "scalar_tensor")

class _ThreadFlag(threading.local):
    on = False  # a class attribute: every thread reads False until it sets its own, without an AttributeError


# set while torch.cuda.device's own __enter__/__exit__ run in this thread: there torch 1.x reads the current device
# and sets the index the funnel already mapped, both real indices
_in_device_context = _ThreadFlag()


def _started(cuda):
    try:
        return bool(cuda.is_initialized())
    except Exception:
        return False


def _compiled(cuda):
    fn = getattr(cuda, "_is_compiled", None)
    try:
        return bool(fn()) if fn is not None else True
    except Exception:
        return True


def nccl_version(torch):
    """torch's NCCL as (major, minor, patch), or None (a CPU build, no NCCL). Does not start CUDA."""
    fn = getattr(getattr(torch, "_C", None), "_nccl_version", None)
    try:
        return gpu_cosplay_ranks.nccl_version_tuple(fn()) if fn is not None else None
    except Exception:
        return None


def _wrap(owner, name, make, originals, replace_everywhere=None, prefix=None):
    """Replaces owner.name by make(original) once (over the costume's own wrapper, if any), and where modules under
    `prefix` bound the same original by name."""
    orig = getattr(owner, name, None)
    if orig is None or getattr(orig, MARK, False):
        return None
    new = make(orig)
    try:
        new.__wrapped__ = orig
        new.__name__ = getattr(orig, "__name__", name)
        new.__doc__ = getattr(orig, "__doc__", None)
    except Exception:
        pass
    setattr(new, MARK, True)
    originals.setdefault(name, getattr(orig, "__wrapped__", orig))
    setattr(owner, name, new)
    if prefix and replace_everywhere is not None:
        replace_everywhere(prefix, name, orig, new)
    return new


def patch(torch, ranks, originals, replace_everywhere):
    """Installs the mapping. `originals`: where the torch.cuda originals are kept (the hook's state.orig, whose
    post-init reads the real device_count); `replace_everywhere(prefix, name, orig, new)`: the hook's helper."""
    cuda = torch.cuda
    n = ranks.count
    device_cls = torch.device
    local_index = ranks.local_index
    compiled = _compiled(cuda)

    def named(device):
        """(ordinal, is_string) a device argument names, or (None, False). It runs on every wrapped call, so it looks
        at the exact class first: a dtype, a tensor or None costs three compares."""
        cls = device.__class__
        if cls is str:
            if device[:5] == "cuda:" and device[5:].isdigit():
                return int(device[5:]), True
            return None, False
        if cls is int:
            return device, False
        if cls is device_cls and device.type == "cuda":
            index = device.index
            if index is not None:
                return index, False
        return None, False

    def real_index(ordinal, strict):
        if ranks.settled and (ordinal == ranks.rank or (ordinal == 0 and not strict)):
            return 0  # the common case, without a call
        return local_index(ordinal, strict, _started(cuda))

    cuda0 = device_cls("cuda", 0)

    def map_device(device, strict=False):
        """A device argument on its way to C++: cuda:k -> cuda:0, another rank's refused, anything else as it is.
        It runs on every call of the wrapped functions: named() and real_index() inlined, one call fewer each."""
        cls = device.__class__
        if cls is str:
            if device[:5] != "cuda:" or not device[5:].isdigit():
                return device
            ordinal, strict = int(device[5:]), True
        elif cls is int:
            ordinal = device
        elif cls is device_cls and device.type == "cuda" and device.index is not None:
            ordinal = device.index
        else:
            return device
        if ordinal < 0:
            return device  # torch's "none"
        if not (ranks.settled and (ordinal == ranks.rank or (ordinal == 0 and not strict))):
            local_index(ordinal, strict, _started(cuda))  # chooses, settles or refuses: the index is always 0
        if ordinal == 0:
            return device
        if cls is str:
            return "cuda:0"
        return 0 if cls is int else cuda0

    # -- the funnels: torch.cuda's, and torch's own where torch.nn.parallel bound it
    context_cls = getattr(cuda, "device", None)

    def make_funnel(orig):
        def _get_device_index(device, *a, **kw):
            ordinal, is_str = named(device)
            if ordinal is None:
                if context_cls is not None and isinstance(device, context_cls):
                    return orig(device, *a, **kw)  # its idx went through here already: a real index
            elif ordinal >= 0 and not ranks.settled and not _started(cuda):
                ranks.choose(ordinal)  # before the original: with none named it asks current_device(), which settles
            result = orig(device, *a, **kw)
            # an ordinal named, or the current device ("cuda", None): current_device() below says the rank
            if result.__class__ is int and result >= 0:
                return real_index(result, is_str)
            return result
        return _get_device_index

    utils = getattr(cuda, "_utils", None) or sys.modules.get("torch.cuda._utils")
    if utils is not None and getattr(utils, "_get_device_index", None) is not None:
        _wrap(utils, "_get_device_index", make_funnel, originals, replace_everywhere, "torch")
    generic = sys.modules.get("torch._utils")
    generic_orig = getattr(generic, "_get_device_index", None)
    if generic_orig is not None and not getattr(generic_orig, MARK, False):
        parallel_funnel = make_funnel(generic_orig)
        setattr(parallel_funnel, MARK, True)
        parallel_funnel.__wrapped__ = generic_orig
        replace_everywhere("torch.nn.parallel", "_get_device_index", generic_orig, parallel_funnel)

    # -- torch.cuda's device functions
    def make_set_device(orig):
        def set_device(device):
            if _in_device_context.on:
                return orig(device)
            return orig(map_device(device, strict=True))
        return set_device

    def make_current_device(orig):
        def current_device():
            if _in_device_context.on:
                return orig()
            if not ranks.settled:
                ranks.settle()
            index = orig()
            return ranks.rank if index == 0 else index
        return current_device

    def make_device_count(orig):
        def device_count():
            # without asking the driver: that starts CUDA, which reads CUDA_VISIBLE_DEVICES before the rank is known
            return n if compiled else orig()
        return device_count

    def make_is_available(orig):
        def is_available():
            if ranks.settled or not compiled or _started(cuda):
                return orig()
            return True  # the driver's answer waits for the rank (asking it starts CUDA)
        return is_available

    def make_lazy_init(orig):
        def _lazy_init(*a, **kw):
            if not ranks.settled:
                ranks.settle()
            return orig(*a, **kw)
        return _lazy_init

    _wrap(cuda, "set_device", make_set_device, originals, replace_everywhere, "torch.cuda")
    _wrap(cuda, "current_device", make_current_device, originals, replace_everywhere, "torch.cuda")
    _wrap(cuda, "device_count", make_device_count, originals, replace_everywhere, "torch.cuda")
    _wrap(cuda, "is_available", make_is_available, originals, replace_everywhere, "torch.cuda")
    _wrap(cuda, "_lazy_init", make_lazy_init, originals, replace_everywhere, "torch.cuda")
    _patch_device_context(context_cls)

    # -- device arguments that go straight to C++
    tensor = getattr(torch, "Tensor", None)
    if tensor is not None:
        def make_to(orig):
            def to(self, *args, **kwargs):
                if args:
                    cls = args[0].__class__
                    if cls is str or cls is int or cls is device_cls:  # not a dtype or a tensor
                        first = map_device(args[0])
                        if first is not args[0]:
                            args = (first,) + args[1:]
                if kwargs and "device" in kwargs:
                    kwargs["device"] = map_device(kwargs["device"])
                return orig(self, *args, **kwargs)
            return to

        def make_cuda(orig):
            def cuda_(self, *args, **kwargs):
                if args:
                    args = (map_device(args[0]),) + args[1:]
                if kwargs and "device" in kwargs:
                    kwargs["device"] = map_device(kwargs["device"])
                return orig(self, *args, **kwargs)
            return cuda_

        _wrap(tensor, "to", make_to, {})
        _wrap(tensor, "cuda", make_cuda, {})

    def make_factory(orig):
        def factory(*args, **kwargs):
            if kwargs and "device" in kwargs:
                kwargs["device"] = map_device(kwargs["device"])
            return orig(*args, **kwargs)
        return factory

    factories = []
    for name in FACTORIES:
        orig = getattr(torch, name, None)
        if orig is not None:
            new = _wrap(torch, name, make_factory, {})
            if new is not None:
                factories.append((name, orig, new))
    _keep_torchscript_builtins(factories)

    def other_rank(device):
        """The ordinal `device` names when it is another rank's (or any, before the rank settles): the costume answers
        for it without the driver. None otherwise."""
        ordinal, _ = named(device) if device is not None else (None, False)
        if ordinal is not None and 0 <= ordinal < n and (not ranks.settled or ordinal != ranks.rank):
            return ordinal
        return None

    return other_rank


def _keep_torchscript_builtins(wrapped):
    """TorchScript knows torch.zeros & co. by their identity (torch.jit._builtins, a table built once from dir(torch));
    a wrapper it does not know it would try to compile from source, and fail. Each wrapper gets its original's op."""
    builtins = sys.modules.get("torch.jit._builtins")
    if builtins is None:
        return
    table = getattr(builtins, "_builtin_table", None)
    for name, orig, new in wrapped:
        if table is not None:
            if id(orig) in table:
                table[id(new)] = table[id(orig)]
        elif isinstance(getattr(builtins, "_builtin_ops", None), list):
            builtins._builtin_ops.append((new, "aten::" + name))  # the table, when built, finds them in dir(torch) too


def _patch_device_context(context_cls):
    """torch 1.x's `with torch.cuda.device(i)` reads current_device() and calls set_device() with the index the funnel
    mapped (a real one): those run unmapped inside it. Patched on the class itself, so device_of and isinstance keep
    working."""
    if not isinstance(context_cls, type) or getattr(context_cls, MARK, False):
        return
    enter, leave = context_cls.__enter__, context_cls.__exit__

    def __enter__(self):
        before = _in_device_context.on
        _in_device_context.on = True
        try:
            return enter(self)
        finally:
            _in_device_context.on = before

    def __exit__(self, *exc):
        before = _in_device_context.on
        _in_device_context.on = True
        try:
            return leave(self, *exc)
        finally:
            _in_device_context.on = before

    context_cls.__enter__ = __enter__
    context_cls.__exit__ = __exit__
    setattr(context_cls, MARK, True)
