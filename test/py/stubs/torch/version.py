import os
__version__ = os.environ.get("STUB_TORCH_VERSION", "2.4.0")
