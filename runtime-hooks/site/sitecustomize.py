"""gpu-cosplay: the costume for every Python in an image, from a folder on PYTHONPATH.

A user's own image (`up --image`) usually lets no one but root write its site-packages, so the `.pth` hook cannot go
there. Every CPython that runs `site` (the system one, each venv, each conda env) imports the first `sitecustomize` on
sys.path, and PYTHONPATH comes first: this folder on PYTHONPATH reaches them all, with nothing written into the image.
It loads gpu_cosplay_hook from the folder above (which does nothing without the env contract), without leaving that
folder on sys.path, then runs the `sitecustomize` this one shadows (Debian's, Ubuntu's apport, an image's own), as
`site` would have. It never raises: a broken costume must not break an interpreter.

Not reached: `python -I` or `-E` (they ignore PYTHONPATH), `-S` (no site), interpreters that are not CPython, or a
PYTHONPATH the program replaces for its children; a .pth in site-packages, where the image allows one, covers those
that still run `site`.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_HOOKS = os.path.dirname(_HERE)


def _load_hook():
    if "gpu_cosplay_hook" in sys.modules:  # a .pth got there first
        return
    sys.path.insert(0, _HOOKS)
    try:
        import gpu_cosplay_hook  # noqa: F401  (installs itself; inert without GPU_COSPLAY_NAME)
    finally:
        try:
            sys.path.remove(_HOOKS)
        except ValueError:
            pass


def _run_shadowed():
    """The sitecustomize that this one shadows, the next one on sys.path, run as `site` runs it (errors reported, not raised)."""
    import importlib.machinery
    import importlib.util
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.origin is None or os.path.abspath(spec.origin) == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # what `import sitecustomize` would have given the program
    sys.modules["sitecustomize"] = module


try:
    _load_hook()
except BaseException:
    pass
try:
    _run_shadowed()
except Exception as exc:
    try:
        sys.stderr.write("Error in sitecustomize (run by gpu-cosplay's); set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(exc).__name__, exc))
    except Exception:
        pass
