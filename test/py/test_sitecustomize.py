"""runtime-hooks/site/sitecustomize.py: the costume for a user's own image, through PYTHONPATH, in fresh interpreters."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOKS = os.path.join(ROOT, "runtime-hooks")
SITE = os.path.join(HOOKS, "site")
STUBS = os.path.join(ROOT, "test", "py", "stubs")

CONTRACT = {
    "GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090",
    "GPU_COSPLAY_VRAM_MIB": "24576",
    "GPU_COSPLAY_CUDA_TOTAL_MIB": "24268",
    "GPU_COSPLAY_ALLOC_CAP_MIB": "24268",
    "GPU_COSPLAY_PHYS_VRAM_MIB": "40448",
}

PROBE = """
import json, sys
out = {'hook': 'gpu_cosplay_hook' in sys.modules,
       'active': bool(sys.modules.get('gpu_cosplay_hook') and sys.modules['gpu_cosplay_hook'].state()),
       'hooks_on_path': %r in sys.path,
       'finders': len([f for f in sys.meta_path if getattr(f, '_gpu_cosplay', False)]),
       'prefix': sys.prefix, 'base_prefix': getattr(sys, 'base_prefix', sys.prefix),
       'image_site': getattr(sys, '_image_sitecustomize_ran', False)}
try:
    import verify  # runtime-hooks/verify.py must not become a top-level module of the user's programs
    out['verify_importable'] = True
except ImportError:
    out['verify_importable'] = False
try:
    import torch
    out['name'] = torch.cuda.get_device_name(0)
    out['total'] = torch.cuda.get_device_properties(0).total_memory
except ImportError:
    out['name'] = None
print('@@' + json.dumps(out))
""" % HOOKS


def run(python, pythonpath, contract=True, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_COSPLAY_") and k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    if contract:
        env.update(CONTRACT)
    env.update(extra or {})
    p = subprocess.run([python, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir(),
                       timeout=60)
    return p


def probe(testcase, python, pythonpath, **kw):
    p = run(python, pythonpath, **kw)
    testcase.assertEqual(p.returncode, 0, p.stderr.decode())
    line = [l for l in p.stdout.decode().splitlines() if l.startswith("@@")][-1]
    return json.loads(line[2:]), p.stderr.decode()


class SiteCustomizeTest(unittest.TestCase):
    def test_a_python_with_the_folder_on_pythonpath_wears_the_costume(self):
        out, err = probe(self, sys.executable, [SITE, STUBS])
        self.assertEqual(err, "")
        self.assertTrue(out["hook"])
        self.assertTrue(out["active"])
        self.assertEqual(out["finders"], 1)
        self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
        self.assertEqual(out["total"], 24268 * 1024 * 1024)
        # the hooks folder is not left on sys.path: verify.py and friends are no top-level modules of the user's
        self.assertFalse(out["hooks_on_path"])
        self.assertFalse(out["verify_importable"])

    def test_without_the_contract_it_changes_nothing(self):
        out, _ = probe(self, sys.executable, [SITE, STUBS], contract=False)
        self.assertFalse(out["active"])
        self.assertEqual(out["finders"], 0)
        self.assertNotEqual(out["name"], "NVIDIA GeForce RTX 3090")

    def test_the_sitecustomize_it_shadows_still_runs(self):
        image = tempfile.mkdtemp()
        try:
            with open(os.path.join(image, "sitecustomize.py"), "w") as fh:
                fh.write("import sys\nsys._image_sitecustomize_ran = True\n")
            out, err = probe(self, sys.executable, [SITE, image, STUBS])
            self.assertEqual(err, "")
            self.assertTrue(out["image_site"])
            self.assertTrue(out["active"])
            # a broken one is reported as site reports it, and the costume stays on
            with open(os.path.join(image, "sitecustomize.py"), "w") as fh:
                fh.write("raise RuntimeError('the image is broken')\n")
            out, err = probe(self, sys.executable, [SITE, image, STUBS])
            self.assertIn("the image is broken", err)
            self.assertTrue(out["active"])
        finally:
            shutil.rmtree(image, ignore_errors=True)

    def test_a_venv_the_user_made_is_reached_too(self):
        d = tempfile.mkdtemp()
        try:
            made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(d, "venv")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            if made.returncode != 0:
                self.skipTest("python3 -m venv is not available here: %s" % made.stderr.decode()[-200:])
            python = os.path.join(d, "venv", "bin", "python")
            out, err = probe(self, python, [SITE, STUBS])
            self.assertEqual(err, "")
            self.assertNotEqual(out["prefix"], out["base_prefix"])  # really the venv
            self.assertTrue(out["active"])
            self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_with_the_pth_hook_as_well_it_patches_once(self):
        d = tempfile.mkdtemp()
        try:
            with open(os.path.join(d, "gpu_cosplay.pth"), "w") as fh:
                fh.write(HOOKS + "\n")
                with open(os.path.join(HOOKS, "gpu_cosplay.pth")) as src:
                    fh.write(src.read())
            code = "import site, sys\nsite.addsitedir(%r)\n" % d + textwrap.dedent(PROBE)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([SITE, STUBS]), PYTHONDONTWRITEBYTECODE="1", **CONTRACT)
            p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            out = json.loads([l for l in p.stdout.decode().splitlines() if l.startswith("@@")][-1][2:])
            self.assertEqual(out["finders"], 1)
            self.assertEqual(out["name"], "NVIDIA GeForce RTX 3090")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_isolated_mode_is_not_reached_and_that_is_said(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([SITE, STUBS]), **CONTRACT)
        p = subprocess.run([sys.executable, "-I", "-c", "import sys; print('gpu_cosplay_hook' in sys.modules)"],
                           stdout=subprocess.PIPE, env=env, timeout=60)
        self.assertEqual(p.stdout.decode().strip(), "False")
        with open(os.path.join(SITE, "sitecustomize.py")) as fh:
            self.assertIn("-I", fh.read())


if __name__ == "__main__":
    unittest.main()
