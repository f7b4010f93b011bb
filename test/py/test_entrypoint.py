"""docker/entrypoint.sh: the session environment it writes carries hostile values verbatim and runs nothing; its root
part starts from a fixed environment; the user's --env values are written by the user, never by root.

Runs the entrypoint's write_session_env / write_user_env in a temporary root (GPU_COSPLAY_ENTRYPOINT_LIB=1 only defines
the functions), then reads the files back the way their consumers do: ~/.ssh/environment as sshd does (NAME=VALUE per
line, literal) and /etc/profile.d/gpu-cosplay.sh by sourcing it in sh and in bash. The fixed environment is tested by
running the entrypoint itself, with a command (`entrypoint.sh env -0`: it execs its arguments once its environment is
fixed).
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
# the image's PATH, as the fixed environment keeps it for the sessions
IMAGE_PATH = {"GPU_COSPLAY_IMAGE_ENV_PATH": "/opt/conda/bin:/usr/bin:/bin"}


def as_user_argv(argv):
    """argv that runs as `nobody` when the tests run as root (write_user_env refuses root), else as is."""
    if os.getuid() != 0:
        return argv
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + argv


def give_to_nobody(*paths):
    if os.getuid() != 0:
        return
    nobody = pwd.getpwnam("nobody")
    for path in paths:
        for dirpath, dirnames, filenames in os.walk(path):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
                os.chown(name, nobody.pw_uid, nobody.pw_gid)


def user_uid():
    return pwd.getpwnam("nobody").pw_uid if os.getuid() == 0 else os.getuid()


@unittest.skipUnless(shutil.which("bash"), "needs bash")
class SessionEnvTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-")
        self.pwned = os.path.join(self.root, "pwned")
        self.values = {k: v.replace("{pwned}", self.pwned) for k, v in {**HOSTILE, **NEWLINE}.items()}
        env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1",
               **self.values, **NOT_PERSISTED, **IMAGE_PATH}
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

    def test_the_ssh_environment_starts_as_the_base_the_user_side_extends(self):
        self.assertEqual(read(self.ssh_env), read(os.path.join(self.root, "etc/gpu-cosplay/ssh-environment")))

    def test_the_image_variables_are_persisted_under_their_own_names(self):
        self.assertNotIn("GPU_COSPLAY_IMAGE_ENV_PATH", self.read_ssh_environment())
        self.assertEqual(self.sourced("sh")["PATH"], IMAGE_PATH["GPU_COSPLAY_IMAGE_ENV_PATH"])

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


@unittest.skipUnless(shutil.which("bash") and (os.getuid() != 0 or shutil.which("setpriv")), "needs bash (and setpriv as root)")
class UserEnvTest(unittest.TestCase):
    """The user's --env values: written by write_user_env as the session user (values on stdin), read literally by ssh
    sessions and login shells; the root part writes only fixed files."""

    USER_VALUES = {
        "HF_HOME": "/data/hf",
        "MY_QUOTES": "it's \"quoted\" $HOME `id` $(id)",
        "MY_TRAILING": "ends with a backslash\\",
        "MY_MULTILINE": "first line\nsecond 'line' $HOME\nMY_INJECTED=1",
        "PATH": "/workspace/bin:/usr/bin:/bin",
    }

    BASHRC = '# System-wide .bashrc file\n# If not running interactively, don\'t do anything\n[ -z "$PS1" ] && return\n'

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-")
        os.chmod(self.root, 0o755)
        self.home = os.path.join(self.root, "home/u")
        self.profile = os.path.join(self.root, "etc/profile.d/gpu-cosplay.sh")
        self.bashrc = os.path.join(self.root, "etc/bash.bashrc")
        os.makedirs(os.path.dirname(self.bashrc))
        with open(self.bashrc, "w") as f:
            f.write(self.BASHRC)
        # the root part: gpu-cosplay's values and the image's, nothing of the user's
        root_env = {"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1", "GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090",
                    **IMAGE_PATH}
        result = subprocess.run(["bash", "-c", '. "$1" && write_session_env /home/u "$2"', "entrypoint", ENTRYPOINT, str(user_uid())],
                                env=root_env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        give_to_nobody(self.home)
        # the user part, as the user: NAME=VALUE pairs on stdin, each ended by a NUL
        pairs = "".join("%s=%s\0" % item for item in self.USER_VALUES.items()) + "1BAD=x\0no equals sign\0"
        result = subprocess.run(as_user_argv(["bash", "-c", '. "$1" && write_user_env /home/u', "entrypoint", ENTRYPOINT]), input=pairs,
                                env={"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1"}, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.stderr = result.stderr
        self.ssh_env = self.read_ssh_env()

    def tearDown(self):
        shutil.rmtree(self.root)

    def read_ssh_env(self):
        result = {}
        with open(os.path.join(self.home, ".ssh/environment")) as f:
            for line in f.read().split("\n"):
                if line and not line.startswith("#") and "=" in line:
                    name, value = line.split("=", 1)
                    result[name] = value
        return result

    def as_sshd_runs(self, script, login_shell="bash"):
        """`ssh host cmd`: sshd sets exactly the ~/.ssh/environment values, then runs `$SHELL -c cmd`."""
        env = {"HOME": self.home, **self.ssh_env}
        if "BASH_ENV" in env:  # the container path, seen from here
            env["BASH_ENV"] = self.root + env["BASH_ENV"]
        result = subprocess.run(as_user_argv([login_shell, "-c", script]), env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_root_writes_none_of_them(self):
        for path in (self.profile, os.path.join(self.root, "etc/gpu-cosplay/ssh-environment")):
            text = read(path)
            for name, value in self.USER_VALUES.items():
                if name != "PATH":
                    self.assertNotIn(name, text, path)
            self.assertNotIn("/workspace/bin", text, path)

    def test_the_user_files_are_the_users_and_private(self):
        for path in (os.path.join(self.home, ".ssh/environment"), os.path.join(self.home, ".gpu-cosplay/session-env.sh")):
            self.assertEqual(os.stat(path).st_uid, user_uid(), path)
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600, path)

    def test_write_user_env_refuses_to_run_as_root(self):
        if os.getuid() != 0:
            self.skipTest("needs root")
        result = subprocess.run(["bash", "-c", '. "$1" && write_user_env /home/u', "entrypoint", ENTRYPOINT], input="A=1\0",
                                env={"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1"}, capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)

    def test_single_line_values_are_in_the_ssh_environment_literally_after_the_base(self):
        for name in ("HF_HOME", "MY_QUOTES", "MY_TRAILING", "PATH"):
            self.assertEqual(self.ssh_env[name], self.USER_VALUES[name], name)
        self.assertEqual(self.ssh_env["GPU_COSPLAY_NAME"], "NVIDIA GeForce RTX 3090")
        for name in ("1BAD", "MY_INJECTED", "MY_MULTILINE"):
            self.assertNotIn(name, self.ssh_env)

    def test_every_value_reaches_ssh_host_cmd_through_bash(self):
        for name, value in self.USER_VALUES.items():
            self.assertEqual(self.as_sshd_runs('printf %%s "$%s"' % name), value, name)
        self.assertEqual(self.as_sshd_runs('printf %s "${MY_INJECTED-unset}"'), "unset")

    def test_bash_env_is_read_once_so_a_changed_value_survives_in_child_shells(self):
        self.assertEqual(self.as_sshd_runs('printf %s "${BASH_ENV-unset}"'), "unset")
        self.assertEqual(self.as_sshd_runs('export MY_MULTILINE=changed; bash -c \'printf %s "$MY_MULTILINE"\''), "changed")

    def test_bash_started_by_sshd_gets_them_through_bash_bashrc(self):
        # Debian's bash run by sshd (SSH_CLIENT set) reads /etc/bash.bashrc, not BASH_ENV: as it does, by hand
        env = {"PATH": "/usr/bin:/bin", "HOME": self.home, **self.ssh_env, "BASH_ENV": self.root + self.ssh_env["BASH_ENV"]}
        script = '. "$1"; printf %s "$MY_MULTILINE"; printf "|%s" "${BASH_ENV-unset}"'
        result = subprocess.run(as_user_argv(["bash", "-c", script, "bash", self.bashrc]), env=env, capture_output=True, text=True)
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

    def test_login_shells_of_the_user_get_every_value(self):
        for shell in ("sh", "bash"):
            for name, value in self.USER_VALUES.items():
                result = subprocess.run(as_user_argv([shell, "-c", '. "$1"; printf %%s "$%s"' % name, shell, self.profile]),
                                        env={"PATH": "/usr/bin:/bin", "HOME": self.home}, capture_output=True, text=True)
                self.assertEqual(result.stdout, value, "%s %s" % (shell, name))

    def test_a_login_shell_of_another_uid_does_not_read_the_users_file(self):
        if os.getuid() != 0:
            self.skipTest("needs root to be another uid than the session user")
        result = subprocess.run(["sh", "-c", '. "$1"; printf %s "${HF_HOME-unset}"', "sh", self.profile],
                                env={"PATH": "/usr/bin:/bin", "HOME": self.home}, capture_output=True, text=True)
        self.assertEqual(result.stdout, "unset")

    def test_the_newline_values_are_named_in_the_log(self):
        self.assertIn("MY_MULTILINE", self.stderr)


def make_fake_tools(folder, marker):
    """Programs the root part might look up on PATH, each writing `marker` (with its uid) when run."""
    os.makedirs(folder, exist_ok=True)
    for tool in ("bash", "env", "sh", "id", "getent", "grep", "sort", "mkdir", "chown", "stat", "cat", "sleep", "printenv"):
        path = os.path.join(folder, tool)
        with open(path, "w") as f:
            f.write("#!/bin/sh\nid -u >>%s\nexec /usr/bin/%s \"$@\"\n" % (marker, tool if tool != "sh" else "dash"))
        os.chmod(path, 0o755)


@unittest.skipUnless(shutil.which("bash") and os.path.exists("/bin/bash"), "needs /bin/bash")
class FixedEnvironmentTest(unittest.TestCase):
    """The entrypoint run as PID 1's child is: whatever else is in its environment, its root part sees a fixed one."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-env-")
        self.marker = os.path.join(self.dir, "ran")
        make_fake_tools(os.path.join(self.dir, "evil"), self.marker)
        with open(os.path.join(self.dir, "x.sh"), "w") as f:
            f.write("id -u >>%s\n" % self.marker)
        self.hostile = {
            "PATH": os.path.join(self.dir, "evil") + ":/usr/bin:/bin",
            "BASH_ENV": os.path.join(self.dir, "x.sh"),
            "ENV": os.path.join(self.dir, "x.sh"),
            "LD_PRELOAD": "/nonexistent/evil.so",
            "LD_LIBRARY_PATH": os.path.join(self.dir, "evil"),
            "BASH_FUNC_compgen%%": "() { id -u >>%s; }" % self.marker,
            "SECRET_TOKEN": "hunter2",
            "GPU_COSPLAY_NAME": "NVIDIA GeForce RTX 3090",
            "GPU_COSPLAY_UID": "1234",
            "NVIDIA_VISIBLE_DEVICES": "MIG-1",
        }

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_entrypoint(self, *argv):
        return subprocess.run([ENTRYPOINT, *argv], env=self.hostile, capture_output=True, timeout=60)

    def test_the_command_it_runs_sees_only_gpu_cosplays_variables(self):
        result = self.run_entrypoint("/usr/bin/env", "-0")
        self.assertEqual(result.returncode, 0, result.stderr)
        env = dict(item.split("=", 1) for item in result.stdout.decode().split("\0") if item)
        for name in ("BASH_ENV", "ENV", "LD_PRELOAD", "LD_LIBRARY_PATH", "SECRET_TOKEN", "BASH_FUNC_compgen%%"):
            self.assertNotIn(name, env)
        self.assertEqual(env["PATH"], "/usr/sbin:/usr/bin:/sbin:/bin")
        self.assertEqual(env["HOME"], "/root")
        self.assertEqual(env["GPU_COSPLAY_NAME"], "NVIDIA GeForce RTX 3090")
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], "MIG-1")
        # the image's variables, kept for the sessions under names root does not use
        self.assertEqual(env["GPU_COSPLAY_IMAGE_ENV_PATH"], self.hostile["PATH"])
        self.assertEqual(env["GPU_COSPLAY_IMAGE_ENV_LD_LIBRARY_PATH"], self.hostile["LD_LIBRARY_PATH"])

    def test_nothing_of_the_environment_runs(self):
        self.run_entrypoint("/usr/bin/true")
        self.run_entrypoint("true")
        self.assertFalse(os.path.exists(self.marker), read(self.marker) if os.path.exists(self.marker) else "")


@unittest.skipUnless(shutil.which("bash") and os.getuid() == 0 and shutil.which("mount"), "needs root and mount")
class WorkspaceTest(unittest.TestCase):
    """claim_workspace: the image's own /workspace becomes the user's; a mount, never (not even an empty root-owned one)."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-ws-")
        self.workspace = os.path.join(self.root, "workspace")
        os.makedirs(self.workspace)
        self.mounted = None

    def tearDown(self):
        if self.mounted:
            subprocess.run(["umount", self.mounted], check=False)
        shutil.rmtree(self.root)

    def claim(self):
        result = subprocess.run(["bash", "-c", '. "$1"; set -euo pipefail; claim_workspace 4321 4322', "ep", ENTRYPOINT],
                                env={"PATH": "/usr/bin:/bin", "ROOT": self.root, "GPU_COSPLAY_ENTRYPOINT_LIB": "1"},
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)

    def bind(self, source, target):
        subprocess.run(["mount", "--bind", source, target], check=True)
        self.mounted = target

    def test_an_empty_root_owned_mount_stays_roots(self):
        source = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-src-")
        try:
            self.bind(source, self.workspace)
            self.claim()
            self.assertEqual(os.stat(self.workspace).st_uid, 0)
        finally:
            if self.mounted:
                subprocess.run(["umount", self.mounted], check=True)
                self.mounted = None
            os.rmdir(source)

    def test_the_images_own_folder_becomes_the_users(self):
        open(os.path.join(self.workspace, "file"), "w").close()
        self.claim()
        self.assertEqual(os.stat(self.workspace).st_uid, 4321)
        self.assertEqual(os.stat(os.path.join(self.workspace, "file")).st_uid, 4321)

    def test_nothing_mounted_below_the_images_folder_is_chowned(self):
        source = tempfile.mkdtemp(prefix="gpu-cosplay-entrypoint-src-")
        open(os.path.join(source, "theirs"), "w").close()
        inner = os.path.join(self.workspace, "data")
        os.makedirs(inner)
        try:
            self.bind(source, inner)
            self.claim()
            self.assertEqual(os.stat(os.path.join(inner, "theirs")).st_uid, 0)
        finally:
            if self.mounted:
                subprocess.run(["umount", self.mounted], check=True)
                self.mounted = None
            shutil.rmtree(source)


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

    def test_sshd_config_names_the_user_and_reads_the_users_environment_file(self):
        self.bash("write_sshd_config alice")
        config = read(os.path.join(self.root, "etc/gpu-cosplay/sshd_config")).split("\n")
        self.assertIn("AllowUsers alice", config)
        # sshd reads ~/.ssh/environment once it is the user (OpenSSH: do_setusercontext, then do_setup_env)
        self.assertIn("PermitUserEnvironment yes", config)
        self.assertIn("UsePAM no", config)  # no /etc/pam.d/sshd in this root


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

    def test_one_daemon_per_rank_each_on_its_own_device_all_quit(self):
        base = os.path.dirname(self.pipe)
        self.bash('start_mps "$2" "$3"; write_session_env /home/u; stop_mps', GPU_COSPLAY_MPS_DEVICES="MIG-aaa MIG-bbb")
        calls = self.calls()
        by_pipe = {}
        for c in calls:
            by_pipe.setdefault(c["pipeDirectory"], []).append((c["command"], c["cudaVisibleDevices"]))
        self.assertEqual(sorted(by_pipe), [os.path.join(base, "rank-0/pipe"), os.path.join(base, "rank-1/pipe")])
        for rank, device in ((0, "MIG-aaa"), (1, "MIG-bbb")):
            self.assertEqual(by_pipe[os.path.join(base, "rank-%d/pipe" % rank)], [
                ("-d", device), ("set_default_active_thread_percentage 25", device),
                ("set_default_device_pinned_mem_limit 0 2048M", device), ("quit", None)])
        # the session's variables point at rank 0's daemon (the costume points each rank's process at its own)
        self.assertEqual(self.ssh_env()["CUDA_MPS_PIPE_DIRECTORY"], os.path.join(base, "rank-0/pipe"))
        self.assertEqual(self.read_status(), "running")

    def test_a_rank_whose_daemon_fails_stops_those_started_and_says_which(self):
        base = os.path.dirname(self.pipe)
        self.bash('start_mps "$2" "$3"', GPU_COSPLAY_MPS_DEVICES="MIG-aaa MIG-bbb", GPU_COSPLAY_SIM_MPS_FAIL="-d@" + os.path.join(base, "rank-1/pipe"))
        self.assertRegex(self.read_status(), r"^failed: rank 1: \S*nvidia-cuda-mps-control -d failed: simulated failure of -d$")
        quits = [c for c in self.calls() if c["command"] == "quit"]
        self.assertEqual([c["pipeDirectory"] for c in quits], [os.path.join(base, "rank-0/pipe")])

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


class MountPointTest(unittest.TestCase):
    """is_mount_point under the entrypoint's `set -o pipefail`: a mount point found early in a long mount table must
    read as found every time (a `mount_points | grep -q` would kill the writer with SIGPIPE and say "not a mount" now
    and then, and claim_workspace would chown a mounted workspace)."""

    def run_lib(self, script):
        body = (
            '. "$1"; set -euo pipefail; '
            'mount_points() { printf "%s\\n" /workspace; for i in $(seq 1 20000); do printf "/mnt/filler-%s\\n" "$i"; done; }; '
            + script
        )
        return subprocess.run(["bash", "-c", body, "entrypoint", ENTRYPOINT], env={"PATH": "/usr/bin:/bin", "GPU_COSPLAY_ENTRYPOINT_LIB": "1"},
                              capture_output=True, text=True, timeout=120)

    def test_a_mount_point_early_in_a_long_table_is_found_every_time(self):
        result = self.run_lib('n=0; for k in 1 2 3 4 5 6 7 8 9 10; do is_mount_point /workspace && n=$((n+1)); done; echo "$n"')
        self.assertEqual(result.stdout.strip(), "10", result.stderr)

    def test_a_path_not_in_the_table_is_not_a_mount_point(self):
        result = self.run_lib('if is_mount_point /work; then echo yes; else echo no; fi')
        self.assertEqual(result.stdout.strip(), "no", result.stderr)


if __name__ == "__main__":
    unittest.main()
