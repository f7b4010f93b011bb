"""Runs verify.py's JAX/CuPy check (check_framework_env) over costume environments written by the TypeScript side.

Usage: check_costume_contract.py FILE.json, where FILE holds [{"case": "...", "env": {...}}, ...].
Prints one JSON object {"checked": N, "failures": [...]} and exits 1 when any case fails.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "runtime-hooks"))

import gpu_cosplay_env  # noqa: E402
import verify  # noqa: E402


def main(path):
    with open(path) as fh:
        cases = json.load(fh)
    failures = []
    saved = dict(os.environ)
    for case in cases:
        os.environ.clear()
        os.environ.update(case["env"])
        try:
            status, detail = verify.check_framework_env(gpu_cosplay_env.load(case["env"]))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        if status != "PASS":
            failures.append({"case": case["case"], "status": status, "detail": detail})
    print(json.dumps({"checked": len(cases), "failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
