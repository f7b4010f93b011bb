"""docker/entrypoint.sh: the session environment it writes carries hostile values verbatim and runs nothing.

Runs the entrypoint's write_session_env in a temporary root (GPU_COSPLAY_ENTRYPOINT_LIB=1 only defines the
functions), then reads the two files back the way their consumers do: ~/.ssh/environment as sshd does
(NAME=VALUE per line, literal) and /etc/profile.d/gpu-cosplay.sh by sourcing it in sh and in bash.
"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENTRYPOINT = os.path.join(REPO, "docker", "entrypoint.sh")
MPS_SIM = os.path.join(REPO, "test", "sim", "nvidia-cuda-mps-control")

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


@unittest.skipUnless(shutil.which("bash"), "needs bash")
class UserEnvTest(unittest.TestCase):
    """Every name in GPU_COSPLAY_USER_ENV_NAMES (the user's --env) reaches ssh sessions and login shells literally."""

    USER_VALUES = {
        "HF_HOME": "/data/hf",
        "MY_QUOTES": "it's \"quoted\" $HOME `id` $(id)",
        "MY_TRAILING": "ends with a backslash\\",
        "MY_MULTILINE": "first line\nsecond 'line' $HOME\nMY_INJECTED=1",
    }

    BASHRC = '# System-wide .bashrc file\n# If not running interactively, don\'t do anything\n[ -z "$PS1" ] && return\n'

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-")
        self.profile = os.path.join(self.root, "etc/profile.d/gpu-cosplay.sh")
        self.bashrc = os.path.join(self.root, "etc/bash.bashrc")
        os.makedirs(os.path.dirname(self.bashrc))
        with open(self.bashrc, "w") as f:
            f.write(self.BASHRC)
        env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1", **self.USER_VALUES,
               "NOT_GIVEN": "stays out", "GPU_COSPLAY_USER_ENV_NAMES": " ".join(list(self.USER_VALUES) + ["UNSET_NAME", "1BAD"])}
        result = subprocess.run(["bash", "-c", '. "$1" && write_session_env /home/u', "entrypoint", ENTRYPOINT],
                                env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.stderr = result.stderr
        self.ssh_env = self.read_ssh_env()

    def tearDown(self):
        shutil.rmtree(self.root)

    def read_ssh_env(self):
        result = {}
        with open(os.path.join(self.root, "home/u/.ssh/environment")) as f:
            for line in f.read().split("\n"):
                if line and not line.startswith("#") and "=" in line:
                    name, value = line.split("=", 1)
                    result[name] = value
        return result

    def as_sshd_runs(self, script, login_shell="bash"):
        """`ssh host cmd`: sshd sets exactly the ~/.ssh/environment values, then runs `$SHELL -c cmd`."""
        env = {"PATH": "/usr/bin:/bin", **self.ssh_env}
        if "BASH_ENV" in env:  # the container path, seen from here
            env["BASH_ENV"] = self.root + env["BASH_ENV"]
        result = subprocess.run([login_shell, "-c", script], env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_single_line_values_are_in_the_ssh_environment_literally(self):
        for name in ("HF_HOME", "MY_QUOTES", "MY_TRAILING"):
            self.assertEqual(self.ssh_env[name], self.USER_VALUES[name], name)
        for name in ("NOT_GIVEN", "UNSET_NAME", "1BAD", "GPU_COSPLAY_USER_ENV_NAMES", "MY_INJECTED"):
            self.assertNotIn(name, self.ssh_env)
        with open(os.path.join(self.root, "etc/gpu-cosplay/permit-user-environment")) as f:
            self.assertEqual(sorted(f.read().strip().split(",")), sorted(self.ssh_env))

    def test_every_value_reaches_ssh_host_cmd_through_bash(self):
        for name, value in self.USER_VALUES.items():
            self.assertEqual(self.as_sshd_runs('printf %%s "$%s"' % name), value, name)
        self.assertEqual(self.as_sshd_runs('printf %s "${MY_INJECTED-unset}"'), "unset")

    def test_bash_env_is_read_once_so_a_changed_value_survives_in_child_shells(self):
        self.assertEqual(self.as_sshd_runs('printf %s "${BASH_ENV-unset}"'), "unset")
        self.assertEqual(self.as_sshd_runs('export MY_MULTILINE=changed; bash -c \'printf %s "$MY_MULTILINE"\''), "changed")

    def test_bash_started_by_sshd_gets_them_through_bash_bashrc(self):
        # Debian's bash run by sshd (SSH_CLIENT set) reads /etc/bash.bashrc, not BASH_ENV: as it does, by hand
        env = {"PATH": "/usr/bin:/bin", **self.ssh_env, "BASH_ENV": self.root + self.ssh_env["BASH_ENV"]}
        script = '. "$1"; printf %s "$MY_MULTILINE"; printf "|%s" "${BASH_ENV-unset}"'
        result = subprocess.run(["bash", "-c", script, "bash", self.bashrc], env=env, capture_output=True, text=True)
        self.assertEqual(result.stdout, self.USER_VALUES["MY_MULTILINE"] + "|unset", result.stderr)
        with open(self.bashrc) as f:
            self.assertTrue(f.read().endswith(self.BASHRC))
        # and nothing when BASH_ENV is not ours (docker exec, an interactive shell after /etc/profile)
        result = subprocess.run(["bash", "-c", script, "bash", self.bashrc], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
        self.assertEqual(result.stdout, "|unset")

    def test_the_bash_bashrc_hook_is_written_once(self):
        subprocess.run(["bash", "-c", '. "$1" && hook_bash_bashrc', "ep", ENTRYPOINT],
                       env={"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1"}, check=True)
        with open(self.bashrc) as f:
            self.assertEqual(f.read().count("values ssh cannot carry"), 1)

    def test_login_shells_get_every_value(self):
        for shell in ("sh", "bash"):
            for name, value in self.USER_VALUES.items():
                result = subprocess.run([shell, "-c", '. "$1"; printf %%s "$%s"' % name, shell, self.profile],
                                        env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
                self.assertEqual(result.stdout, value, "%s %s" % (shell, name))

    def test_the_newline_values_are_named_in_the_log(self):
        self.assertIn("MY_MULTILINE", self.stderr)


def read(path):
    with open(path) as f:
        return f.read()


@unittest.skipUnless(shutil.which("bash"), "needs bash")
class SshdSetupTest(unittest.TestCase):
    """The parts of the container start that sshd depends on, run in a temporary root."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-sshd-")
        self.env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1"}

    def tearDown(self):
        shutil.rmtree(self.root)

    def bash(self, script, **extra):
        result = subprocess.run(["bash", "-c", 'set -euo pipefail; . "$1"; set -euo pipefail; ' + script, "entrypoint", ENTRYPOINT],
                                env={**self.env, **extra}, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_authorized_keys_keep_only_public_key_lines(self):
        keys = "ssh-ed25519 AAAA one\n# a comment\ncommand=\"x\" ssh-rsa AAAA two\necdsa-sha2-nistp256 AAAA three\n\nnot a key"
        self.bash('install_pubkey "$ROOT/home/u"', GPU_COSPLAY_SSH_PUBKEY=keys)
        path = os.path.join(self.root, "home/u/.ssh/authorized_keys")
        self.assertEqual(read(path), "ssh-ed25519 AAAA one\necdsa-sha2-nistp256 AAAA three\n")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.dirname(path)).st_mode & 0o777, 0o700)

    def test_no_key_is_a_warning_and_an_empty_file(self):
        result = self.bash('install_pubkey "$ROOT/home/u"', GPU_COSPLAY_SSH_PUBKEY="")
        self.assertEqual(read(os.path.join(self.root, "home/u/.ssh/authorized_keys")), "")
        self.assertIn("GPU_COSPLAY_SSH_PUBKEY is empty", result.stderr)

    def test_pam_loginuid_is_made_optional_once(self):
        pam = os.path.join(self.root, "etc/pam.d/sshd")
        os.makedirs(os.path.dirname(pam))
        with open(pam, "w") as f:
            f.write("@include common-auth\nsession    required     pam_loginuid.so\nsession required pam_limits.so\n")
        self.bash("relax_pam_loginuid")
        self.assertEqual(read(pam), "@include common-auth\nsession optional pam_loginuid.so\nsession required pam_limits.so\n")
        before = os.stat(pam).st_ino
        self.bash("relax_pam_loginuid")  # already optional (the cosplay image has it done at build): left alone
        self.assertEqual(os.stat(pam).st_ino, before)

    def test_sshd_config_names_the_user_and_the_permitted_variables(self):
        os.makedirs(os.path.join(self.root, "etc/gpu-cosplay"))
        with open(os.path.join(self.root, "etc/gpu-cosplay/permit-user-environment"), "w") as f:
            f.write("GPU_COSPLAY_NAME,PATH\n")
        self.bash("write_sshd_config alice")
        config = read(os.path.join(self.root, "etc/gpu-cosplay/sshd_config")).split("\n")
        self.assertIn("AllowUsers alice", config)
        self.assertIn("PermitUserEnvironment GPU_COSPLAY_NAME,PATH", config)
        self.assertIn("UsePAM no", config)  # no /etc/pam.d/sshd in this root

    def test_sshd_config_without_a_permit_file_permits_none(self):
        self.bash("write_sshd_config alice")
        self.assertIn("PermitUserEnvironment none", read(os.path.join(self.root, "etc/gpu-cosplay/sshd_config")).split("\n"))


@unittest.skipUnless(shutil.which("bash"), "needs bash")
class RootWithoutSudoTest(unittest.TestCase):
    """What a session user may do as root: nothing, unless `up --sudo` asked the entrypoint (GPU_COSPLAY_GRANT_SUDO=1).
    And root itself, without CAP_DAC_OVERRIDE, writes only into folders it owns: homes are handed over last."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-root-")
        os.makedirs(os.path.join(self.root, "etc/sudoers.d"))
        self.sudoers = os.path.join(self.root, "etc/sudoers.d/gpu-cosplay")
        self.env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1"}

    def tearDown(self):
        shutil.rmtree(self.root)

    def bash(self, script, **extra):
        result = subprocess.run(["bash", "-c", 'set -euo pipefail; . "$1"; set -euo pipefail; ' + script, "entrypoint", ENTRYPOINT],
                                env={**self.env, **extra}, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    @unittest.skipUnless(shutil.which("sudo"), "needs sudo on PATH (grant_sudo checks for it)")
    def test_sudoers_entry_only_when_asked(self):
        self.bash("grant_sudo alice", GPU_COSPLAY_GRANT_SUDO="1")
        self.assertEqual(read(self.sudoers), "alice ALL=(ALL) NOPASSWD:ALL\n")
        self.assertEqual(os.stat(self.sudoers).st_mode & 0o777, 0o440)
        for value in (None, "0", "yes"):
            extra = {} if value is None else {"GPU_COSPLAY_GRANT_SUDO": value}
            self.bash("grant_sudo alice", **extra)
            self.assertFalse(os.path.exists(self.sudoers), value)

    def test_the_variable_is_the_entrypoints_own_and_never_reaches_sessions(self):
        self.bash("write_session_env /home/u", GPU_COSPLAY_GRANT_SUDO="1", GPU_COSPLAY_NAME="x")
        self.assertNotIn("GPU_COSPLAY_GRANT_SUDO", read(os.path.join(self.root, "home/u/.ssh/environment")))
        self.assertNotIn("GPU_COSPLAY_GRANT_SUDO", read(os.path.join(self.root, "etc/profile.d/gpu-cosplay.sh")))

    @unittest.skipUnless(os.getuid() == 0, "needs root to hand files to another user")
    def test_an_existing_home_is_taken_for_the_set_up_and_handed_back_last(self):
        nobody = pwd.getpwnam("nobody")
        home = os.path.join(self.root, "home/img")
        os.makedirs(os.path.join(home, ".ssh"))
        with open(os.path.join(home, ".ssh/authorized_keys"), "w") as f:
            f.write("old\n")
        for path in (home, os.path.join(home, ".ssh"), os.path.join(home, ".ssh/authorized_keys")):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        os.chmod(home, 0o750)
        os.chmod(os.path.join(home, ".ssh"), 0o700)
        seen = self.bash('HOME_CREATED=0; take_home /home/img; stat -c %u "$ROOT/home/img" "$ROOT/home/img/.ssh";'
                         'install_pubkey "$ROOT/home/img"; hand_home_over /home/img "$2" "$3"'.replace('"$2" "$3"', "%d %d" % (nobody.pw_uid, nobody.pw_gid)),
                         GPU_COSPLAY_SSH_PUBKEY="ssh-ed25519 AAAA new")
        self.assertEqual(seen.stdout.split(), ["0", "0"])  # root's while it writes
        for path in (home, os.path.join(home, ".ssh"), os.path.join(home, ".ssh/authorized_keys")):
            self.assertEqual(os.stat(path).st_uid, nobody.pw_uid, path)
        self.assertEqual(read(os.path.join(home, ".ssh/authorized_keys")), "ssh-ed25519 AAAA new\n")

    @unittest.skipUnless(os.getuid() == 0, "needs root to hand files to another user")
    def test_a_new_home_is_handed_over_whole(self):
        home = os.path.join(self.root, "home/new")
        os.makedirs(os.path.join(home, ".ssh"))
        open(os.path.join(home, ".bashrc"), "w").close()
        self.bash("HOME_CREATED=1; take_home /home/new; hand_home_over /home/new 4321 4322")
        for path in (home, os.path.join(home, ".ssh"), os.path.join(home, ".bashrc")):
            self.assertEqual((os.stat(path).st_uid, os.stat(path).st_gid), (4321, 4322), path)


@unittest.skipUnless(shutil.which("bash"), "needs bash")
class UnprivilegedStartTest(unittest.TestCase):
    """A user's own image through the engine starts the entrypoint as the session user: what it sets up then."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-unpriv-")
        os.chmod(self.root, 0o755)
        self.record = os.path.join(self.root, "mps-calls.jsonl")
        open(self.record, "w").close()
        self.env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1",
                    "GPU_COSPLAY_HOOKS_DIR": os.path.join(REPO, "runtime-hooks"),
                    "GPU_COSPLAY_MPS_THREAD_PCT": "25", "GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB": "2048",
                    "GPU_COSPLAY_MPS_CONTROL": MPS_SIM, "GPU_COSPLAY_SIM_MPS_LOG": self.record}

    def tearDown(self):
        pipe = os.path.join(self.root, "tmp/gpu-cosplay/mps/pipe")
        if os.path.exists(os.path.join(pipe, "control")):
            subprocess.run([MPS_SIM], input="quit\n", env={"CUDA_MPS_PIPE_DIRECTORY": pipe}, capture_output=True)
        shutil.rmtree(self.root)

    def test_mps_under_tmp_as_the_user_then_the_ready_marker(self):
        # (the hooks go into this machine's pythons otherwise: install_pth is tested on its own)
        script = '. "$1"; install_python_hooks_once() { :; }; setup_unprivileged "$(id -u)" "$(id -g)"; stop_mps'
        result = subprocess.run(["bash", "-c", script, "entrypoint", ENTRYPOINT], env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        base = os.path.join(self.root, "tmp/gpu-cosplay")
        self.assertTrue(os.path.exists(os.path.join(base, "ready")))
        self.assertEqual(read(os.path.join(base, "mps/status")).strip(), "running")
        with open(self.record) as f:
            calls = [json.loads(line) for line in f]
        self.assertEqual(calls[0]["command"], "-d")
        self.assertEqual({c["pipeDirectory"] for c in calls}, {os.path.join(base, "mps/pipe")})
        self.assertEqual({c["uid"] for c in calls}, {os.getuid()})
        self.assertIn("nothing as root", result.stderr)

    def test_an_unwritable_site_packages_is_a_warning_not_a_failure(self):
        site = os.path.join(self.root, "site")
        with open(site, "w") as f:  # a file where the folder should be: mkdir fails, as in a folder root does not own
            f.write("")
        script = '. "$1"; install_pth "$GPU_COSPLAY_HOOKS_DIR" "$ROOT/site/python3.11" /usr/bin/python3; echo went on'
        result = subprocess.run(["bash", "-c", "set -euo pipefail; " + script, "entrypoint", ENTRYPOINT], env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "went on")
        self.assertIn("/usr/bin/python3 runs without the costume hooks", result.stderr)

    def test_a_writable_site_packages_gets_the_hook(self):
        script = '. "$1"; install_pth "$GPU_COSPLAY_HOOKS_DIR" "$ROOT/site" python3'
        subprocess.run(["bash", "-c", script, "entrypoint", ENTRYPOINT], env=self.env, check=True, timeout=60)
        self.assertEqual(read(os.path.join(self.root, "site/gpu_cosplay.pth")).split("\n")[0], self.env["GPU_COSPLAY_HOOKS_DIR"])


def is_gone(pid, timeout_s=10.0):
    """True once pid has exited (a zombie waiting for its reaper counts as exited)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if read("/proc/%d/stat" % pid).rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


@unittest.skipUnless(shutil.which("bash") and shutil.which("setpriv"), "needs bash and setpriv")
class MpsTest(unittest.TestCase):
    """start_mps/stop_mps/run_service against the MPS control stand-in (test/sim/nvidia-cuda-mps-control)."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-mps-")
        os.chmod(self.root, 0o755)  # the session user (another uid when we are root) reaches the MPS folders
        self.record = os.path.join(self.root, "mps-calls.jsonl")
        open(self.record, "w").close()
        os.chmod(self.record, 0o666)
        self.pipe = os.path.join(self.root, "run/mps/pipe")
        self.status = os.path.join(self.root, "run/mps/status")
        self.env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1",
                    "GPU_COSPLAY_MPS_THREAD_PCT": "25", "GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB": "2048",
                    "GPU_COSPLAY_MPS_CONTROL": MPS_SIM, "GPU_COSPLAY_MPS_STATUS_FILE": self.status,
                    "CUDA_MPS_PIPE_DIRECTORY": self.pipe, "CUDA_MPS_LOG_DIRECTORY": os.path.join(self.root, "run/mps/log"),
                    "CUDA_VISIBLE_DEVICES": "MIG-from-the-users-env", "GPU_COSPLAY_SIM_MPS_LOG": self.record}
        self.uid, self.gid = os.getuid(), os.getgid()

    def tearDown(self):
        if os.path.exists(os.path.join(self.pipe, "control")):
            subprocess.run([MPS_SIM], input="quit\n", env={"CUDA_MPS_PIPE_DIRECTORY": self.pipe}, capture_output=True)
        shutil.rmtree(self.root)

    def bash(self, script, **extra):
        result = subprocess.run(["bash", "-c", '. "$1"; ' + script, "entrypoint", ENTRYPOINT, str(self.uid), str(self.gid)],
                                env={**self.env, **extra}, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def calls(self):
        with open(self.record) as f:
            return [json.loads(line) for line in f]

    def ssh_env(self):
        with open(os.path.join(self.root, "home/u/.ssh/environment")) as f:
            return dict(line.split("=", 1) for line in f.read().split("\n") if "=" in line and not line.startswith("#"))

    def read_status(self):
        with open(self.status) as f:
            return f.read().strip()

    def test_starts_the_daemon_sets_the_limits_exports_the_pipe_and_quits(self):
        self.bash('start_mps "$2" "$3"; write_session_env /home/u; stop_mps')
        calls = self.calls()
        self.assertEqual([c["command"] for c in calls], ["-d", "set_default_active_thread_percentage 25",
                                                         "set_default_device_pinned_mem_limit 0 2048M", "quit"])
        for call in calls:
            self.assertIsNone(call["cudaVisibleDevices"])  # the container's one device, not the user's setting
            self.assertEqual(call["pipeDirectory"], self.pipe)
            self.assertEqual(call["uid"], self.uid)
        self.assertEqual(os.stat(self.pipe).st_mode & 0o777, 0o700)
        self.assertEqual(self.ssh_env()["CUDA_MPS_PIPE_DIRECTORY"], self.pipe)
        self.assertEqual(self.read_status(), "running")
        self.assertFalse(os.path.exists(os.path.join(self.pipe, "control")))

    @unittest.skipUnless(os.getuid() == 0, "needs root to start the daemon as another user")
    def test_the_daemon_runs_as_the_session_user(self):
        self.uid = self.gid = pwd.getpwnam("nobody").pw_uid
        self.bash('start_mps "$2" "$3"; write_session_env /home/u')
        pid = int(read(os.path.join(self.pipe, "nvidia-cuda-mps-control.pid")))
        self.assertEqual(os.stat("/proc/%d" % pid).st_uid, self.uid)
        self.assertEqual(os.stat(self.pipe).st_uid, self.uid)
        self.assertEqual({c["uid"] for c in self.calls()}, {self.uid})
        self.bash('MPS_CONTROL=$GPU_COSPLAY_MPS_CONTROL MPS_UID=$2 MPS_GID=$3 stop_mps')
        self.assertTrue(is_gone(pid))

    def test_without_the_binary_it_warns_once_and_exports_nothing(self):
        result = self.bash('start_mps "$2" "$3"; write_session_env /home/u', GPU_COSPLAY_MPS_CONTROL="/nonexistent/nvidia-cuda-mps-control")
        self.assertEqual(len([l for l in result.stderr.splitlines() if "warning" in l]), 1, result.stderr)
        self.assertNotIn("CUDA_MPS_PIPE_DIRECTORY", self.ssh_env())
        self.assertNotIn("CUDA_MPS_LOG_DIRECTORY", self.ssh_env())
        self.assertEqual(self.read_status(), "unavailable: no /nonexistent/nvidia-cuda-mps-control in this container")
        self.assertEqual(self.calls(), [])

    def test_without_the_mps_variables_nothing_starts(self):
        env = {k: v for k, v in self.env.items() if not k.startswith("GPU_COSPLAY_MPS_")}
        result = subprocess.run(["bash", "-c", '. "$1"; start_mps 1000 1000; write_session_env /home/u', "ep", ENTRYPOINT],
                                env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.calls(), [])
        self.assertNotIn("CUDA_MPS_PIPE_DIRECTORY", self.ssh_env())

    def test_bad_limits_start_nothing(self):
        for pct, mib in (("0", "2048"), ("101", "2048"), ("25", "2G"), ("25", ""), ("x", "1")):
            self.bash('start_mps "$2" "$3"', GPU_COSPLAY_MPS_THREAD_PCT=pct, GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB=mib)
            self.assertEqual(self.calls(), [], (pct, mib))
            self.assertRegex(self.read_status(), r"^failed: GPU_COSPLAY_MPS_THREAD_PCT='%s' / " % pct)

    def test_limits_the_daemon_refuses_stop_it(self):
        self.bash('start_mps "$2" "$3"', GPU_COSPLAY_SIM_MPS_FAIL="set_default_active_thread_percentage")
        self.assertEqual(self.read_status(), "failed: MPS limits not accepted: simulated failure of set_default_active_thread_percentage")
        self.assertEqual(self.calls()[-1]["command"], "quit")
        self.assertFalse(os.path.exists(os.path.join(self.pipe, "control")))

    def test_a_daemon_that_does_not_start_says_why_in_one_line(self):
        self.bash('start_mps "$2" "$3"', GPU_COSPLAY_SIM_MPS_FAIL="-d")
        self.assertRegex(self.read_status(), r"^failed: \S*nvidia-cuda-mps-control -d failed: simulated failure of -d$")
        self.assertNotIn("\n", self.read_status())

    def test_sigterm_to_the_entrypoint_quits_the_daemon_first(self):
        proc = subprocess.Popen(["bash", "-c", '. "$1"; start_mps "$2" "$3"; run_service sleep 1000', "entrypoint", ENTRYPOINT,
                                 str(self.uid), str(self.gid)], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 30
            while not (os.path.exists(self.status) and read(self.status).strip() == "running" and
                       subprocess.run(["pgrep", "-P", str(proc.pid), "-x", "sleep"], capture_output=True).returncode == 0):
                self.assertLess(time.time(), deadline, "the entrypoint did not start its service")
                time.sleep(0.05)
            pid = int(read(os.path.join(self.pipe, "nvidia-cuda-mps-control.pid")))
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=30), 143)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.assertEqual(self.calls()[-1]["command"], "quit")
        self.assertTrue(is_gone(pid))


if __name__ == "__main__":
    unittest.main()
