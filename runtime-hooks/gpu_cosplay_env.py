#!/usr/bin/env python3
"""The environment contract between the host tool and everything that runs inside a cosplay container.

Standard library only; importing this module must stay cheap (it is imported by the .pth hook at every
interpreter start). See README.md in this folder for the contract.

CLI: ``python3 gpu_cosplay_env.py`` prints the JAX / CuPy variables as KEY=VALUE lines (nothing when the
contract is absent), e.g. for ``eval``/``export`` in a shell profile or an entrypoint.
"""

import os

MIB = 1024 * 1024

ENV_CARD = "GPU_COSPLAY_CARD"
ENV_NAME = "GPU_COSPLAY_NAME"
ENV_VRAM_GB = "GPU_COSPLAY_VRAM_GB"
ENV_VRAM_MIB = "GPU_COSPLAY_VRAM_MIB"
ENV_PHYS_VRAM_MIB = "GPU_COSPLAY_PHYS_VRAM_MIB"
ENV_CUDA_TOTAL_MIB = "GPU_COSPLAY_CUDA_TOTAL_MIB"
ENV_ALLOC_CAP_MIB = "GPU_COSPLAY_ALLOC_CAP_MIB"
ENV_TDP_W = "GPU_COSPLAY_TDP_W"
ENV_FP32_TFLOPS = "GPU_COSPLAY_FP32_TFLOPS"
ENV_BF16_TFLOPS = "GPU_COSPLAY_BF16_TFLOPS"
ENV_BW_GBS = "GPU_COSPLAY_BW_GBS"
ENV_HAS_BF16 = "GPU_COSPLAY_HAS_BF16"
ENV_HAS_TF32 = "GPU_COSPLAY_HAS_TF32"
ENV_SESSION = "GPU_COSPLAY_SESSION"
ENV_REPORT_DIR = "GPU_COSPLAY_REPORT_DIR"
ENV_UID = "GPU_COSPLAY_UID"
ENV_DISABLE = "GPU_COSPLAY_DISABLE"

DEFAULT_REPORT_DIR = "/workspace/.gpu-cosplay"


def _num(value, conv):
    if value is None:
        return None
    value = str(value).strip()
    if not value:
        return None
    try:
        out = conv(value)
    except (TypeError, ValueError):
        try:
            out = conv(float(value))
        except (TypeError, ValueError):
            return None
    return out


def _flag(value, default):
    if value is None or str(value).strip() == "":
        return default
    return str(value).strip().lower() not in ("0", "false", "no", "off")


class Contract(object):
    """Parsed contract. Only built when GPU_COSPLAY_NAME and a VRAM figure are present."""

    __slots__ = ("card", "name", "vram_gb", "vram_mib", "phys_vram_mib", "cuda_total_mib", "alloc_cap_mib", "tdp_w",
                 "fp32_tflops", "bf16_tflops", "bw_gbs", "has_bf16", "has_tf32", "session", "report_dir")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def cap_bytes(self):
        """The card's VRAM as nvidia-smi and NVML show it."""
        return int(self.vram_mib) * MIB

    @property
    def cuda_total_bytes(self):
        """What CUDA (torch's total_memory) reports on the card: its VRAM less the driver's reserve."""
        return int(self.cuda_total_mib) * MIB

    @property
    def alloc_cap_bytes(self):
        """What torch's allocator (and CuPy, JAX) may hold: never above the session's hard limit."""
        return int(self.alloc_cap_mib) * MIB

    @property
    def phys_bytes(self):
        return int(self.phys_vram_mib) * MIB if self.phys_vram_mib else None

    def as_dict(self):
        return dict((k, getattr(self, k)) for k in self.__slots__)


def load(environ=None):
    """Return a Contract, or None when the contract is absent (or GPU_COSPLAY_DISABLE=1)."""
    env = os.environ if environ is None else environ
    if _flag(env.get(ENV_DISABLE), False):
        return None
    name = (env.get(ENV_NAME) or "").strip()
    if not name:
        return None
    vram_gb = _num(env.get(ENV_VRAM_GB), float)
    vram_mib = _num(env.get(ENV_VRAM_MIB), int)
    if vram_mib is None and vram_gb is not None:
        vram_mib = int(round(vram_gb * 1024))
    if vram_mib is None or vram_mib <= 0:
        return None
    if vram_gb is None:
        vram_gb = vram_mib / 1024.0
    phys = _num(env.get(ENV_PHYS_VRAM_MIB), int)
    if phys is not None and phys <= 0:
        phys = None
    # a host tool older than these two gave one figure for all three
    cuda_total = _num(env.get(ENV_CUDA_TOTAL_MIB), int)
    if cuda_total is None or cuda_total <= 0 or cuda_total > vram_mib:
        cuda_total = vram_mib
    alloc_cap = _num(env.get(ENV_ALLOC_CAP_MIB), int)
    if alloc_cap is None or alloc_cap <= 0 or alloc_cap > cuda_total:
        alloc_cap = cuda_total
    return Contract(
        card=(env.get(ENV_CARD) or "").strip() or None,
        name=name,
        vram_gb=vram_gb,
        vram_mib=vram_mib,
        phys_vram_mib=phys,
        cuda_total_mib=cuda_total,
        alloc_cap_mib=alloc_cap,
        tdp_w=_num(env.get(ENV_TDP_W), float),
        fp32_tflops=_num(env.get(ENV_FP32_TFLOPS), float),
        bf16_tflops=_num(env.get(ENV_BF16_TFLOPS), float),
        bw_gbs=_num(env.get(ENV_BW_GBS), float),
        has_bf16=_flag(env.get(ENV_HAS_BF16), True),
        has_tf32=_flag(env.get(ENV_HAS_TF32), True),
        session=(env.get(ENV_SESSION) or "").strip() or None,
        report_dir=(env.get(ENV_REPORT_DIR) or "").strip() or DEFAULT_REPORT_DIR,
    )


def mem_fraction(cap_mib, phys_mib):
    """cap / phys, floored to 4 decimals (never rounds up past the cap), clamped to (0, 1]."""
    if not cap_mib or not phys_mib or cap_mib <= 0 or phys_mib <= 0:
        return None
    frac = int(cap_mib * 10000 // phys_mib) / 10000.0
    if frac > 1.0:
        frac = 1.0
    if frac <= 0:
        frac = 0.0001
    return frac


def format_fraction(frac):
    return "%.4f" % frac


def framework_env(cap_mib, phys_mib):
    """Environment values for JAX and CuPy. Returns an ordered list of (KEY, VALUE).

    XLA_CLIENT_MEM_FRACTION / XLA_PYTHON_CLIENT_MEM_FRACTION = cap/phys (4 decimals, floored),
    XLA_PYTHON_CLIENT_PREALLOCATE=false, CUPY_GPU_MEMORY_LIMIT = cap in bytes (integer).
    Without a physical figure only the CuPy limit and the preallocation switch are given.
    """
    out = []
    frac = mem_fraction(cap_mib, phys_mib)
    if frac is not None:
        out.append(("XLA_CLIENT_MEM_FRACTION", format_fraction(frac)))
        out.append(("XLA_PYTHON_CLIENT_MEM_FRACTION", format_fraction(frac)))
    if cap_mib:
        out.append(("XLA_PYTHON_CLIENT_PREALLOCATE", "false"))
        out.append(("CUPY_GPU_MEMORY_LIMIT", str(int(cap_mib) * MIB)))
    return out


def framework_env_for(contract):
    if contract is None:
        return []
    return framework_env(contract.alloc_cap_mib, contract.phys_vram_mib)


def main(argv=None):
    import sys
    argv = sys.argv[1:] if argv is None else argv
    contract = load()
    export = "--export" in argv
    for k, v in framework_env_for(contract):
        sys.stdout.write(("export %s=%s\n" if export else "%s=%s\n") % (k, v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
