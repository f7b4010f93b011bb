# Mirrors real torch: submodules bind helpers with `from . import x` at import time.
from . import _lazy_init, mem_get_info, set_per_process_memory_fraction  # noqa: F401
