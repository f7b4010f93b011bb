#!/usr/bin/env python3
"""Measure the interpreter start-up cost the .pth hook adds. Prints JSON.

Compares `python3 -c pass` with a site dir holding gpu_cosplay.pth (contract set, so the hook installs its
finder) against the same site dir without the .pth. Median of N runs each (default 20), interleaved.
Usage: python3 bench_startup.py [--runs N] [--python PATH] [--no-compile]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))


def main(argv):
    runs = 20
    py = sys.executable
    if "--runs" in argv:
        runs = int(argv[argv.index("--runs") + 1])
    if "--python" in argv:
        py = argv[argv.index("--python") + 1]
    tmp = tempfile.mkdtemp()
    with_dir = os.path.join(tmp, "with")
    without_dir = os.path.join(tmp, "without")
    os.makedirs(with_dir)
    os.makedirs(without_dir)
    for f in ("gpu_cosplay_hook.py", "gpu_cosplay_env.py", "gpu_cosplay.pth"):
        shutil.copy(os.path.join(HERE, f), with_dir)
    for f in ("gpu_cosplay_hook.py", "gpu_cosplay_env.py"):
        shutil.copy(os.path.join(HERE, f), without_dir)
    compiled = "--no-compile" not in argv
    if compiled:  # as in the image: site-packages is byte-compiled at build time
        subprocess.run([py, "-m", "compileall", "-q", with_dir, without_dir], check=True)
    env = dict(os.environ)
    env.update({"GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090", "GPU_COSPLAY_VRAM_MIB": "24576",
                "GPU_COSPLAY_PHYS_VRAM_MIB": "40448"})
    # sitecustomize-free way to add a site dir with .pth processing: PYTHONSTARTUP does not run for -c,
    # so use `-c "import site; site.addsitedir(d)"` for both variants (same work except the .pth).
    def once(d):
        t0 = time.perf_counter()
        subprocess.run([py, "-c", "import site; site.addsitedir(%r)" % d], env=env, check=True)
        return time.perf_counter() - t0

    once(with_dir)
    once(without_dir)
    a, b = [], []
    for _ in range(runs):
        a.append(once(with_dir))
        b.append(once(without_dir))
    # also check the hook was really active in the "with" variant
    chk = subprocess.run([py, "-c", "import site, sys; site.addsitedir(%r); "
                          "print(sys.modules['gpu_cosplay_hook'].state() is not None)" % with_dir],
                         env=env, stdout=subprocess.PIPE).stdout.decode().strip()
    shutil.rmtree(tmp, ignore_errors=True)
    med_a, med_b = statistics.median(a), statistics.median(b)
    print(json.dumps({
        "python": py,
        "runs": runs,
        "byteCompiled": compiled,
        "hookActive": chk == "True",
        "medianWithMs": round(med_a * 1000, 2),
        "medianWithoutMs": round(med_b * 1000, 2),
        "addedMs": round((med_a - med_b) * 1000, 2),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
