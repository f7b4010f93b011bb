"""docker/entrypoint.sh: the session environment it writes carries hostile values verbatim and runs nothing.

Runs the entrypoint's write_session_env in a temporary root (GPU_COSPLAY_ENTRYPOINT_LIB=1 only defines the
functions), then reads the two files back the way their consumers do: ~/.ssh/environment as sshd does
(NAME=VALUE per line, literal) and /etc/profile.d/gpu-cosplay.sh by sourcing it in sh and in bash.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENTRYPOINT = os.path.join(REPO, "docker", "entrypoint.sh")

HOSTILE = {
    "GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090",
    "GPU_COSPLAY_QUOTES": "it's \"quoted\" 'twice'",
    "GPU_COSPLAY_DOLLAR": "$HOME ${PATH} $(touch {pwned}) `touch {pwned}2`",
    "GPU_COSPLAY_BACKSLASH": "back\\slash \\n \\' end\\",
    "GPU_COSPLAY_SEMICOLON": "x; touch {pwned}3 # not a comment",
    "GPU_COSPLAY_SPACES": "  leading and trailing  ",
    "GPU_COSPLAY_EMPTY": "",
    "NVIDIA_VISIBLE_DEVICES": "MIG-5b0c1f2e-7a7e-5d1c-9a3b-0123456789ab",
    "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.1667",
    "CUPY_GPU_MEMORY_LIMIT": "25769803776",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
}
NEWLINE = {"GPU_COSPLAY_NEWLINE": "line1\nGPU_COSPLAY_INJECTED=1\nexport LD_PRELOAD=/tmp/evil.so"}
NOT_PERSISTED = {"GPU_COSPLAY_SSH_PUBKEY": "ssh-ed25519 AAAA test", "GPU_COSPLAY_UID": "1234", "LD_PRELOAD": "/x.so",
                 "SECRET_TOKEN": "hunter2"}


@unittest.skipUnless(shutil.which("bash"), "needs bash")
class SessionEnvTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-")
        self.pwned = os.path.join(self.root, "pwned")
        self.values = {k: v.replace("{pwned}", self.pwned) for k, v in {**HOSTILE, **NEWLINE}.items()}
        env = {"PATH": "/opt/conda/bin:/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1",
               **self.values, **NOT_PERSISTED}
        result = subprocess.run(["bash", "-c", '. "$1" && write_session_env /home/u', "entrypoint", ENTRYPOINT],
                                env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.stderr = result.stderr
        self.ssh_env = os.path.join(self.root, "home/u/.ssh/environment")
        self.profile = os.path.join(self.root, "etc/profile.d/gpu-cosplay.sh")

    def tearDown(self):
        shutil.rmtree(self.root)

    def read_ssh_environment(self):
        """As sshd's read_environment_file: skip blanks and #, split at the first '=', value is literal."""
        result = {}
        with open(self.ssh_env, "rb") as f:
            for raw in f.read().decode().split("\n"):
                line = raw.lstrip(" \t")
                if not line or line.startswith("#") or "=" not in line:
                    continue
                name, value = line.split("=", 1)
                result[name] = value
        return result

    def sourced(self, shell):
        names = sorted({**HOSTILE, **NEWLINE, **NOT_PERSISTED, "GPU_COSPLAY_INJECTED": "", "PATH": ""})
        script = '. "$1"; for n in %s; do eval "v=\\${$n-<unset>}"; printf "%%s=%%s\\0" "$n" "$v"; done' % " ".join(names)
        result = subprocess.run([shell, "-c", script, shell, self.profile], env={"PATH": "/usr/bin:/bin"},
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        return dict(item.split("=", 1) for item in result.stdout.split("\0") if item)

    def test_ssh_environment_is_literal_and_complete(self):
        got = self.read_ssh_environment()
        for name, value in HOSTILE.items():
            self.assertEqual(got[name], self.values[name], name)
        self.assertEqual(got["PATH"], "/opt/conda/bin:/usr/bin:/bin")

    def test_ssh_environment_drops_a_value_with_a_newline(self):
        got = self.read_ssh_environment()
        self.assertNotIn("GPU_COSPLAY_NEWLINE", got)
        self.assertNotIn("GPU_COSPLAY_INJECTED", got)
        self.assertNotIn("LD_PRELOAD", got)
        self.assertIn("GPU_COSPLAY_NEWLINE", self.stderr)

    def test_ssh_environment_is_private(self):
        self.assertEqual(os.stat(self.ssh_env).st_mode & 0o777, 0o600)

    def test_entrypoint_settings_and_foreign_variables_are_not_persisted(self):
        ssh_names = set(self.read_ssh_environment())
        sh_values = self.sourced("sh")
        for name in NOT_PERSISTED:
            self.assertNotIn(name, ssh_names)
            self.assertEqual(sh_values[name], "<unset>", name)
        self.assertNotIn("GPU_COSPLAY_ENTRYPOINT_LIB", ssh_names)

    def test_permit_user_environment_lists_exactly_the_written_names(self):
        with open(os.path.join(self.root, "etc/gpu-cosplay/permit-user-environment")) as f:
            allowed = f.read().strip().split(",")
        self.assertEqual(sorted(allowed), sorted(self.read_ssh_environment()))

    def test_profile_script_round_trips_in_sh_and_bash(self):
        for shell in ("sh", "bash"):
            if not shutil.which(shell):
                continue
            got = self.sourced(shell)
            for name in {**HOSTILE, **NEWLINE}:
                self.assertEqual(got[name], self.values[name], "%s: %s" % (shell, name))
            self.assertEqual(got["GPU_COSPLAY_INJECTED"], "<unset>", shell)
            self.assertEqual(got["LD_PRELOAD"], "<unset>", shell)

    def test_nothing_ran(self):
        self.sourced("sh")
        self.sourced("bash")
        self.assertEqual([p for p in os.listdir(self.root) if p.startswith("pwned")], [])


if __name__ == "__main__":
    unittest.main()
