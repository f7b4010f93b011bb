#!/bin/bash -p
# gpu-cosplay container entrypoint. Runs as root, as PID 1's child under tini (or docker --init), holding only the
# capabilities `gpu-cosplay up` leaves it (CHOWN, SETUID, SETGID, SYS_CHROOT, AUDIT_WRITE; see container-privileges.ts):
# no CAP_DAC_OVERRIDE, so root writes only into folders it owns, and hands the user's over at the end. Started as
# another user (a user's own image through the box's engine), it sets up what that user can and runs nothing as root
# (see setup_unprivileged).
#
# Input (environment, set by `gpu-cosplay up` from its own values: never a value of the session user's):
#   GPU_COSPLAY_USER, GPU_COSPLAY_UID, GPU_COSPLAY_GID   the host user to recreate (default cosplay 1000 1000)
#   GPU_COSPLAY_SSH_PUBKEY                              one or more authorized_keys lines
#   GPU_COSPLAY_HOOKS_DIR                               where runtime-hooks/ lives (/opt/gpu-cosplay/hooks)
#   GPU_COSPLAY_GRANT_SUDO                                    1: the session user gets sudo (`up --sudo`); anything else: none
#   GPU_COSPLAY_* (the costume), NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, XLA_*, CUPY_*,
#   PYTORCH_CUDA_ALLOC_CONF                            persisted for every session (see write_session_env)
#   GPU_COSPLAY_MPS_THREAD_PCT, GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB, CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY,
#   GPU_COSPLAY_MPS_CONTROL, GPU_COSPLAY_MPS_DEVICES    an MPS control daemon for this session, or one per rank's
#                                                       device with up --count N (see start_mps)
#   the image's own variables (IMAGE_VARS)              persisted for every session, never used by root itself
#
# The root part starts from a fixed environment (fixed_environment): `#!/bin/bash -p` reads no BASH_ENV, imports no
# function and no SHELLOPTS, and the script re-executes itself under `env -i` with exactly the variables above, a PATH
# of system folders and HOME=/root. The user's `--env` values never reach it: `gpu-cosplay up` writes them after the
# container is ready, through `docker exec` as the session user (--user-env, see write_user_env), into files of the
# user's that login shells and sshd read (sshd reads ~/.ssh/environment after it has become the user: OpenSSH's
# do_child calls do_setusercontext before do_setup_env).
#
# Then it execs sshd in the foreground, or, for an image without sshd, sleeps (sessions go through exec); with an
# MPS daemon running it stays as their parent instead, to `quit` the daemon on docker stop (see run_service).
#
# Sourcing this file with GPU_COSPLAY_ENTRYPOINT_LIB=1 only defines the functions (used by
# test/py/test_entrypoint.py). All paths are prefixed with $ROOT (empty in a real container).
set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

ROOT=${ROOT:-}
COSPLAY_DIR=/opt/gpu-cosplay
# ensure_user: 1 when it made the home (then all of it is handed over), 0 for a home the image had
HOME_CREATED=0
# Not persisted: these configure the entrypoint itself.
ENTRYPOINT_ONLY_VARS=' GPU_COSPLAY_USER GPU_COSPLAY_UID GPU_COSPLAY_GID GPU_COSPLAY_SSH_PUBKEY GPU_COSPLAY_HOOKS_DIR GPU_COSPLAY_ENTRYPOINT_LIB GPU_COSPLAY_MPS_CONTROL GPU_COSPLAY_MPS_DEVICES GPU_COSPLAY_MPS_STATUS_FILE GPU_COSPLAY_GRANT_SUDO '
# From the image: without these an ssh session loses conda's python and CUDA's libraries.
IMAGE_VARS=' PATH LD_LIBRARY_PATH CUDA_HOME CUDA_VERSION NVIDIA_DRIVER_CAPABILITIES NVIDIA_REQUIRE_CUDA LANG LC_ALL PYTHONPATH CONDA_PREFIX CONDA_DEFAULT_ENV '
# The fixed environment keeps the image's variables under this prefix, for the sessions only: with a --volume at a
# folder the image's PATH or LD_LIBRARY_PATH names, root using them would run the member's files.
IMAGE_ENV_PREFIX=GPU_COSPLAY_IMAGE_ENV_
# Root's own PATH: system folders, all of them places no --volume may cover (container/volume-targets.ts).
ROOT_PATH=/usr/sbin:/usr/bin:/sbin:/bin
# The session user's own file of --env values, in their home (write_user_env); the profile script sources it.
USER_ENV_FILE=.gpu-cosplay/session-env.sh
# What sshd's environment starts from: ours and the image's values (write_session_env); write_user_env adds the user's.
SSH_ENV_BASE=/etc/gpu-cosplay/ssh-environment

log() { printf 'gpu-cosplay-entrypoint: %s\n' "$*" >&2; }

# Variables of gpu-cosplay's own that the root part keeps (the rest of the fixed environment is IMAGE_VARS, renamed).
is_ours() {
  case "$1" in
    GPU_COSPLAY_ENTRYPOINT_LIB | "$IMAGE_ENV_PREFIX"*) return 1 ;;
    GPU_COSPLAY_* | NVIDIA_VISIBLE_DEVICES | CUDA_VISIBLE_DEVICES | XLA_* | CUPY_* | PYTORCH_CUDA_ALLOC_CONF | CUDA_MPS_PIPE_DIRECTORY | CUDA_MPS_LOG_DIRECTORY) return 0 ;;
  esac
  return 1
}

# Re-executes the entrypoint under `env -i` with only gpu-cosplay's variables, the image's (renamed, see
# IMAGE_ENV_PREFIX), PATH=$ROOT_PATH and HOME=/root. Whatever else reached PID 1 (LD_PRELOAD, BASH_ENV, ENV, ...)
# reaches no program root runs. Arguments: the entrypoint's own.
fixed_environment() {
  local name kept=()
  while IFS= read -r name; do
    if is_ours "$name"; then
      kept+=("$name=${!name}")
    else
      case "$IMAGE_VARS" in *" $name "*) kept+=("$IMAGE_ENV_PREFIX$name=${!name}") ;; esac
    fi
  done < <(compgen -e)
  exec /usr/bin/env -i "${kept[@]}" "PATH=$ROOT_PATH" HOME=/root /bin/bash -p "$0" --fixed-env "$@"
}

# The variables to persist, one line each: "NAME SOURCE", SOURCE being the variable that holds the value here. Ours
# (sorted), then the image's (kept under IMAGE_ENV_PREFIX by fixed_environment).
session_vars() {
  local name source
  while IFS= read -r name; do
    case " $ENTRYPOINT_ONLY_VARS " in *" $name "*) continue ;; esac
    if is_ours "$name"; then printf '%s %s\n' "$name" "$name"; fi
  done < <(compgen -e | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | LC_ALL=C sort)
  for name in $IMAGE_VARS; do
    source=$IMAGE_ENV_PREFIX$name
    if [ -n "${!source+set}" ]; then printf '%s %s\n' "$name" "$source"; fi
  done
}

# POSIX single-quoting: 'it'\''s'. Safe for sh and bash, including newlines; no expansion inside. Sets REPLY
# rather than printing: a $(subshell) per session variable was a quarter of the entrypoint's time.
sh_quote() {
  local s=${1//\'/\'\\\'\'}
  REPLY="'$s'"
}

# Writes the session environment of gpu-cosplay's own values and the image's (never the user's --env values: those are
# the user's, written by write_user_env as the user). Arguments: the user's home directory (without $ROOT), uid.
#
# /etc/gpu-cosplay/ssh-environment and a copy in ~/.ssh/environment, read by sshd for every session (login shell,
#   `ssh host cmd`, sftp, VS Code) with `PermitUserEnvironment yes`. sshd takes each line as NAME=VALUE literally, with
#   no quote, escape or $ processing; a value containing a newline (the only character that could start a second
#   entry) or a carriage return cannot be written there. sshd reads the file after it has become the user (OpenSSH
#   session.c: do_child calls do_setusercontext, then do_setup_env reads it), so the file is the user's to extend:
#   write_user_env adds their --env values. Chosen over /etc/environment (pam_env parses quotes, backslashes and, in
#   pam_env.conf, $ references) and over sshd SetEnv (one line, argv_split's escape rules changed across OpenSSH 8.x).
# /etc/profile.d/gpu-cosplay.sh, for login shells (ssh, `su -`, `docker exec ... bash -l`): POSIX single-quoted values,
#   so newlines survive and nothing is expanded; then, for the session user only, the user's own file of --env values
#   (~/$USER_ENV_FILE).
# A value with a newline reaches `ssh host cmd` through bash: write_user_env then sets BASH_ENV=/etc/profile.d/gpu-cosplay.sh
#   in ~/.ssh/environment, which a non-interactive bash sources before running its command. Debian's and Ubuntu's bash,
#   when it sees it was started by sshd (SSH_CLIENT set), reads /etc/bash.bashrc and ~/.bashrc instead of BASH_ENV, so
#   /etc/bash.bashrc gets a first line that sources $BASH_ENV when it is ours. The script ends by unsetting a BASH_ENV
#   that is ours, so only that first bash reads it and a later `export X=...; bash script.sh` keeps the user's X.
# `docker exec` itself sees the container's Config.Env (gpu-cosplay's values); `gpu-cosplay exec` adds the user's.
write_session_env() {
  local home=$1 uid=${2:-${GPU_COSPLAY_UID:-1000}} name source value vars ssh_env profile base
  vars=$(session_vars)
  mkdir -p "$ROOT$home/.ssh" "$ROOT/etc/profile.d" "$ROOT/etc/gpu-cosplay"
  ssh_env="$ROOT$home/.ssh/environment"
  base="$ROOT$SSH_ENV_BASE"
  profile="$ROOT/etc/profile.d/gpu-cosplay.sh"
  printf '# gpu-cosplay: the session environment of gpu-cosplay and the image (generated at container start)\n' >"$base.tmp"
  printf '# gpu-cosplay session environment (generated at container start; do not edit)\n' >"$profile.tmp"
  while read -r name source; do
    [ -n "$name" ] || continue
    value=${!source}
    sh_quote "$value"
    printf 'export %s=%s\n' "$name" "$REPLY" >>"$profile.tmp"
    case "$value" in
      *$'\n'* | *$'\r'*) log "note: $name contains a newline: login shells get it, sshd's environment cannot" ;;
      *) printf '%s=%s\n' "$name" "$value" >>"$base.tmp" ;;
    esac
  done <<<"$vars"
  # bash's EUID cannot be set from outside; for sh, id -u
  printf '%s\n' "# the session user's own --env values (gpu-cosplay up writes them as that user)" \
    "case \${EUID:-\$(id -u)} in $uid) if [ -r \"\$HOME/$USER_ENV_FILE\" ]; then . \"\$HOME/$USER_ENV_FILE\"; fi ;; esac" \
    '# read once, as BASH_ENV, by the bash that sshd starts for `ssh host cmd`' \
    'case ${BASH_ENV:-} in */profile.d/gpu-cosplay.sh) unset BASH_ENV ;; esac' >>"$profile.tmp"
  printf '%s' "$LOGIN_NOTICE" >>"$profile.tmp"
  hook_bash_bashrc
  chmod 0644 "$base.tmp"
  mv "$base.tmp" "$base"
  cp "$base" "$ssh_env.tmp"
  mv "$ssh_env.tmp" "$ssh_env"
  chmod 0600 "$ssh_env"
  mv "$profile.tmp" "$profile"
  chmod 0644 "$profile"
}

# --user-env: run by `gpu-cosplay up` through `docker exec` as the session user, never as root, once the container is
# ready. Reads the user's --env values from stdin (NAME=VALUE, each ended by a NUL: no value is ever on a command
# line) and writes them where the user's shells find them: ~/$USER_ENV_FILE (POSIX single-quoted, sourced by the profile
# script) and ~/.ssh/environment (sshd's, $SSH_ENV_BASE plus the single-line values; with a multi-line value BASH_ENV
# too, see write_session_env). Argument: the home folder (default: the passwd entry of this uid).
write_user_env() {
  local home=${1:-} entry pair name value dir ssh_env multiline=() names=' ' count=0
  if [ "$EUID" = 0 ]; then log "--user-env writes the session user's files as that user, not as root"; return 64; fi
  if [ -z "$home" ]; then
    entry=$(getent passwd "$EUID" || true)
    entry_field "$entry" 6
    home=$REPLY
  fi
  [ -n "$home" ] && [ -d "$ROOT$home" ] || { log "no home folder for uid $EUID"; return 65; }
  dir=$ROOT$home/${USER_ENV_FILE%/*}
  ssh_env=$ROOT$home/.ssh/environment
  mkdir -p -m 0700 "$dir" "$ROOT$home/.ssh"
  printf '# your gpu-cosplay up --env values (written at up; login shells and ssh sessions read them)\n' >"$ROOT$home/$USER_ENV_FILE.tmp"
  if [ -f "$ROOT$SSH_ENV_BASE" ]; then cat "$ROOT$SSH_ENV_BASE" >"$ssh_env.tmp"; else : >"$ssh_env.tmp"; fi
  while IFS= read -r -d '' pair; do
    name=${pair%%=*}
    value=${pair#*=}
    if ! [[ $pair == *=* && $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      log "skipped an --env entry that is not NAME=VALUE"
      continue
    fi
    count=$((count + 1))
    sh_quote "$value"
    printf 'export %s=%s\n' "$name" "$REPLY" >>"$ROOT$home/$USER_ENV_FILE.tmp"
    names+="$name "
    case "$value" in
      *$'\n'* | *$'\r'*) multiline+=("$name") ;;
      *) printf '%s=%s\n' "$name" "$value" >>"$ssh_env.tmp" ;;
    esac
  done
  if [ ${#multiline[@]} -gt 0 ]; then
    if [[ $names == *" BASH_ENV "* ]]; then
      log "warning: ${multiline[*]} contain a newline and BASH_ENV is yours: they reach login shells, not \`ssh host cmd\`"
    else
      # sshd's environment file holds no newline: non-interactive bash fetches those values from the profile script
      printf 'BASH_ENV=/etc/profile.d/gpu-cosplay.sh\n' >>"$ssh_env.tmp"
      log "note: ${multiline[*]} contain a newline; they reach \`ssh host cmd\` through bash's BASH_ENV"
    fi
  fi
  chmod 0600 "$ROOT$home/$USER_ENV_FILE.tmp" "$ssh_env.tmp"
  mv "$ROOT$home/$USER_ENV_FILE.tmp" "$ROOT$home/$USER_ENV_FILE"
  mv "$ssh_env.tmp" "$ssh_env"
  log "wrote $count --env value(s) for uid $EUID"
}

# Fair share (gpu-cosplay's reaper, apply/reap.ts): a login counts as use of the session (idle reclaim reads the mtime of
# /tmp/gpu-cosplay/last-login), and an interactive shell shows the notice the reaper left when the session ends soon
# (container/session-notice.ts writes it, as the session user). Nothing is printed for `ssh host cmd`, scp or an IDE.
LOGIN_NOTICE='# gpu-cosplay: a login counts as use; an interactive shell shows a notice of the session'"'"'s end
{ mkdir -p /tmp/gpu-cosplay && command : >/tmp/gpu-cosplay/last-login; } 2>/dev/null || true
case $- in *i*) if [ -r /tmp/gpu-cosplay/notice ]; then cat /tmp/gpu-cosplay/notice; fi ;; esac
'

# Bash started by sshd for `ssh host cmd` reads /etc/bash.bashrc (Debian, Ubuntu) but not BASH_ENV: source it there,
# first, before the file's own "not interactive: return". Idempotent; nothing when the file does not exist.
BASHRC_HOOK='case ${BASH_ENV:-} in */profile.d/gpu-cosplay.sh) . "$BASH_ENV" ;; esac # gpu-cosplay: values ssh cannot carry'
hook_bash_bashrc() {
  local rc="$ROOT/etc/bash.bashrc"
  [ -f "$rc" ] || return 0
  grep -qxF "$BASHRC_HOOK" "$rc" && return 0
  { printf '%s\n' "$BASHRC_HOOK"; cat "$rc"; } >"$rc.tmp" && chmod 0644 "$rc.tmp" && mv "$rc.tmp" "$rc"
}

# The hardened sshd config, self-contained (the image's own sshd_config is not read). PermitUserEnvironment yes: sshd
# reads ~/.ssh/environment as the user (see write_session_env), and whatever the user puts there is theirs, for their
# own processes only.
write_sshd_config() {
  local user=$1 use_pam=no
  [ -f "$ROOT/etc/pam.d/sshd" ] && use_pam=yes
  local sftp=internal-sftp
  [ -d "$ROOT/etc/gpu-cosplay" ] || mkdir -p "$ROOT/etc/gpu-cosplay"
  # a string and printf, not cat and a here-document: every fork costs the container start ~1.5 ms
  printf '%s' "\
# generated by gpu-cosplay entrypoint
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
PermitRootLogin no
PasswordAuthentication no
PermitEmptyPasswords no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthenticationMethods publickey
AuthorizedKeysFile .ssh/authorized_keys
AllowUsers $user
UsePAM $use_pam
PermitUserEnvironment yes
X11Forwarding no
AllowTcpForwarding yes
PrintMotd no
PidFile /run/sshd.pid
Subsystem sftp $sftp
" >"$ROOT/etc/gpu-cosplay/sshd_config"
}

valid_name() { [[ $1 =~ ^[a-z_][a-z0-9_-]{0,31}$ ]]; }

# Creates (or adopts) the account for uid:gid and name; sets USER_HOME. Tool chatter goes to stderr.
ensure_user() {
  _ensure_user "$@" >&2
}

# Field N (1-based) of a passwd or group entry into REPLY, with bash alone (no cut, no subshell: each fork costs
# the container start ~1.5 ms).
entry_field() {
  local IFS=: fields
  read -r -a fields <<<"$1"
  REPLY=${fields[$2 - 1]:-}
}
_ensure_user() {
  local name=$1 uid=$2 gid=$3 existing group created=0
  # group: reuse whatever group has the gid; else take over a group of that name; else create it
  if ! getent group "$gid" >/dev/null; then
    if getent group "$name" >/dev/null; then
      groupmod -g "$gid" "$name"
    else
      groupadd -g "$gid" "$name"
    fi
  fi
  existing=$(getent passwd "$uid" || true)
  existing=${existing%%:*}
  if [ -n "$existing" ] && [ "$existing" != "$name" ]; then
    # e.g. 'ubuntu' at 1000 in the image: rename it, keeping its groups; move the image's $name away first. Homes stay
    # where the image has them: moving one copies it out of the image's layer (overlayfs), which takes capabilities
    # (DAC_OVERRIDE, FOWNER) the entrypoint does not hold.
    if getent passwd "$name" >/dev/null; then
      usermod -l "${name:0:28}-img" "$name"
      log "renamed the image's user $name to ${name:0:28}-img"
    fi
    usermod -l "$name" "$existing"
    # its personal group too ('ubuntu' at the same gid), unless the name is taken
    entry_field "$(getent group "$gid")" 1
    if [ "$REPLY" = "$existing" ] && ! getent group "$name" >/dev/null; then
      groupmod -n "$name" "$existing"
    fi
    log "renamed the image's user $existing (uid $uid) to $name"
  elif [ -z "$existing" ]; then
    if getent passwd "$name" >/dev/null; then
      usermod -u "$uid" "$name"
    else
      local shell=/bin/sh
      [ -x /bin/bash ] && shell=/bin/bash
      useradd --no-create-home --home-dir "/home/$name" --uid "$uid" --gid "$gid" --shell "$shell" --password '*' "$name"
      created=1
    fi
  fi
  # '*' = no password, but not "locked" ('!'): sshd without PAM refuses keys for locked accounts. usermod
  # rewrites passwd and shadow (~15 ms): only for a user the image already had; useradd above set both.
  [ "$created" = 1 ] || usermod -g "$gid" -p '*' "$name"
  local home
  entry_field "$(getent passwd "$name")" 6
  home=$REPLY
  HOME_CREATED=0
  if [ ! -d "$home" ]; then
    # root's until hand_home_over: the set-up writes into it without CAP_DAC_OVERRIDE
    mkdir -p "$home"
    cp -a /etc/skel/. "$home"/ 2>/dev/null || true
    HOME_CREATED=1
  fi
  USER_HOME=$home
}

# A home the image already had is the user's: root (without CAP_DAC_OVERRIDE) takes it and its ~/.ssh over for the
# set-up; hand_home_over gives them back. Arguments: home.
take_home() {
  local home=$ROOT$1
  [ "$HOME_CREATED" = 1 ] && return 0
  chown 0:0 "$home" && chmod u+rwx "$home"
  # the folder first: root cannot even list a 0700 folder of the user's to recurse into it
  if [ -d "$home/.ssh" ] && [ ! -L "$home/.ssh" ]; then chown 0:0 "$home/.ssh" && chmod u+rwx "$home/.ssh" && chown -R 0:0 "$home/.ssh"; fi
}

# Arguments: home uid gid. A home this start made is handed over whole, unless something is mounted inside it: a
# mount's files are somebody's on the host, and chown -R would cross into it.
hand_home_over() {
  local home=$ROOT$1 uid=$2 gid=$3
  if [ "$HOME_CREATED" = 1 ] && ! has_mount_under "$home"; then
    chown -R "$uid:$gid" "$home"
  else
    # the home last: once it is the user's, root may not be able to reach into it
    chown -R "$uid:$gid" "$home/.ssh"
    chown "$uid:$gid" "$home"
  fi
}

# The session user's sudoers entry, only for `up --sudo` (GPU_COSPLAY_GRANT_SUDO=1). Otherwise the container runs with
# no-new-privileges, where sudo could not become root anyway: there is no entry to find either. Argument: the name.
grant_sudo() {
  local name=$1 file=$ROOT/etc/sudoers.d/gpu-cosplay
  if [ "${GPU_COSPLAY_GRANT_SUDO:-}" != 1 ]; then
    if [ -e "$file" ]; then rm -f "$file"; fi
    return 0
  fi
  if ! command -v sudo >/dev/null || [ ! -d "$ROOT/etc/sudoers.d" ]; then
    log "warning: sudo was asked for (up --sudo), but this image has no sudo"
    return 0
  fi
  printf '%s ALL=(ALL) NOPASSWD:ALL\n' "$name" >"$file"
  chmod 0440 "$file"
}

# Writes ~/.ssh/authorized_keys (root-owned until main's chown of ~/.ssh).
install_pubkey() {
  local home=$1 line keys=
  if [ -d "$home/.ssh" ]; then chmod 0700 "$home/.ssh"; else mkdir -m 0700 -p "$home/.ssh"; fi
  while IFS= read -r line; do
    if [[ $line =~ ^(ssh-|ecdsa-|sk-) ]]; then keys+=$line$'\n'; fi
  done <<<"${GPU_COSPLAY_SSH_PUBKEY:-}"
  printf '%s' "$keys" >"$home/.ssh/authorized_keys"
  [ -n "$keys" ] || log "warning: GPU_COSPLAY_SSH_PUBKEY is empty or not a public key; ssh login will fail"
  chmod 0600 "$home/.ssh/authorized_keys"
}

# Containers cannot write /proc/self/loginuid: make pam_loginuid optional. The cosplay image has it done at build,
# so a start only reads the file (mapfile, no fork).
relax_pam_loginuid() {
  local pam=$ROOT/etc/pam.d/sshd lines line
  [ -f "$pam" ] || return 0
  mapfile -t lines <"$pam"
  for line in "${lines[@]}"; do
    if [[ $line =~ ^session[[:space:]]+required[[:space:]]+pam_loginuid.so ]]; then
      sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' "$pam"
      return 0
    fi
  done
}

# Mount points as /proc/self/mountinfo names them (octal escapes such as \040 undone), one per line.
mount_points() {
  local point
  while read -r _ _ _ _ point _; do printf '%b\n' "$point"; done </proc/self/mountinfo
}
# No `mount_points | grep -q`: grep leaving at the first match kills the writer (SIGPIPE), and under pipefail a found
# mount point would then read as none, now and then (and the workspace mount be chowned).
is_mount_point() {
  local point
  while IFS= read -r point; do
    [ "$point" = "$1" ] && return 0
  done < <(mount_points)
  return 1
}
# Whether anything is mounted at or below the folder.
has_mount_under() {
  local dir=${1%/} point
  while IFS= read -r point; do
    case "$point" in "$dir" | "$dir"/*) return 0 ;; esac
  done < <(mount_points)
  return 1
}

# /workspace becomes the user's only when it is the image's own folder: a mount (the workspace `gpu-cosplay up` binds,
# always) is never chowned, even an empty root-owned one (its folder is somebody's on the host), nor is anything
# mounted below the image's folder.
claim_workspace() {
  local uid=$1 gid=$2 dir=$ROOT/workspace owner
  if [ -L "$dir" ]; then
    log "/workspace is a link in this image; leaving it as it is"
    return
  fi
  if [ ! -e "$dir" ]; then
    mkdir -p "$dir" && chown "$uid:$gid" "$dir"
    return
  fi
  owner=$(stat -c %u "$dir")
  [ "$owner" = "$uid" ] && return
  if is_mount_point "$dir"; then
    log "/workspace is a mount owned by uid $owner; leaving it as it is"
  elif has_mount_under "$dir"; then
    chown -h "$uid:$gid" "$dir"
  else
    chown -R -h "$uid:$gid" "$dir"
  fi
}

# The first line puts the hook module on sys.path, then the .pth's own lines run. Best effort: a site-packages root does
# not own, or an entrypoint that is not root, leaves that python without the costume, not the container without a
# start. Arguments: hooks folder, site-packages folder, the python (for the message).
install_pth() {
  local hooks=$1 site=$2 py=$3
  if ! { mkdir -p "$site" && { printf '%s\n' "$hooks"; cat "$hooks/gpu_cosplay.pth"; } >"$site/gpu_cosplay.pth"; } 2>/dev/null; then
    log "warning: cannot write $site/gpu_cosplay.pth as uid $EUID: $py runs without the costume hooks"
  fi
}

# Puts gpu_cosplay.pth into the site-packages of every python found (idempotent; also run at build).
install_python_hooks() {
  local hooks=${GPU_COSPLAY_HOOKS_DIR:-$COSPLAY_DIR/hooks} py site seen=' '
  [ -f "$hooks/gpu_cosplay.pth" ] || { log "no $hooks/gpu_cosplay.pth; costume hooks not installed"; return 0; }
  # the image's pythons: only an image without the hooks gets here (the cosplay image has them from its build), and
  # through the box's engine such an image runs as the member, never as root
  for py in $(PATH=${GPU_COSPLAY_IMAGE_ENV_PATH:-$PATH} command -v python3 python 2>/dev/null) /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python3; do
    [ -x "$py" ] || continue
    site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null) || continue
    case "$seen" in *" $site "*) continue ;; esac
    seen="$seen$site "
    install_pth "$hooks" "$site" "$py"
  done
  if [ -f "$hooks/nvidia-smi" ]; then
    chmod 0755 "$hooks/nvidia-smi" 2>/dev/null || true
    # an unprivileged start finds the shim mounted there by `gpu-cosplay up`
    { mkdir -p "$COSPLAY_DIR/bin" && ln -sf "$hooks/nvidia-smi" "$COSPLAY_DIR/bin/nvidia-smi"; } 2>/dev/null || [ -x "$COSPLAY_DIR/bin/nvidia-smi" ] ||
      log "warning: cannot put the nvidia-smi shim into $COSPLAY_DIR/bin"
  fi
  { printf '%s\n' "$hooks" >"$COSPLAY_DIR/hooks-installed"; } 2>/dev/null || true
}

# The gpu-cosplay image installs the hooks when it is built (one python run per interpreter, ~15 ms each): a
# container start repeats that only for an image that did not (any other image gets runtime-hooks/ mounted).
install_python_hooks_once() {
  local hooks=${GPU_COSPLAY_HOOKS_DIR:-$COSPLAY_DIR/hooks} installed=
  read -r installed 2>/dev/null <"$COSPLAY_DIR/hooks-installed" || true
  [ "$installed" = "$hooks" ] && [ -e "$COSPLAY_DIR/bin/nvidia-smi" ] && return 0
  install_python_hooks
}

# --- MPS -------------------------------------------------------------------------------------------------------
# One MPS control daemon per session, inside the container, as the session user: its lifetime is the container's
# (removing the container leaves no daemon), it needs no --ipc=host, and it has the same uid as its clients (one MPS
# server serves one uid). CUDA_VISIBLE_DEVICES is left unset for it: the container exposes exactly the session's
# device (MIG slice or GPU), so "all visible" is that device whatever form NVIDIA_VISIBLE_DEVICES takes, and
# `set_default_device_pinned_mem_limit 0` names it; a CUDA_VISIBLE_DEVICES the user passed with --env is for their
# programs, not for the daemon. /run/gpu-cosplay/mps/status says what happened, in one line whose first word is
# running, unavailable or failed, the last two followed by ": <why>" (`gpu-cosplay up` waits for it and fails a session
# whose plan needs MPS on anything but running; gpu_cosplay_perf.py records it).
MPS_CONTROL=
MPS_UID=
MPS_GID=
MPS_STATUS_FILE=${GPU_COSPLAY_MPS_STATUS_FILE:-/run/gpu-cosplay/mps/status}
# Where a start that is not root keeps what root keeps in /run (gpu-cosplay up points the MPS folders there too).
UNPRIVILEGED_DIR=/tmp/gpu-cosplay

# Arguments: running|unavailable|failed [why]. The why is kept to one line.
mps_status() {
  local line=$1
  [ -z "${2:-}" ] || line="$1: ${2//$'\n'/ }"
  mkdir -p "$(dirname "$MPS_STATUS_FILE")" 2>/dev/null && printf '%s\n' "$line" >"$MPS_STATUS_FILE" 2>/dev/null || true
}

# Runs the control binary as the session user, with the session's MPS folders and no CUDA_VISIBLE_DEVICES (or MPS_DEVICE). The image's
# PATH and LD_LIBRARY_PATH (where CUDA images keep the driver's tools) are set only after setpriv: the user's, not root's.
mps_control_as_user() {
  local as_user=() image_env=() name source
  for name in PATH LD_LIBRARY_PATH; do
    source=$IMAGE_ENV_PREFIX$name
    if [ -n "${!source:-}" ]; then image_env+=("$name=${!source}"); fi
  done
  [ "$(id -u)" = "$MPS_UID" ] || as_user=(setpriv "--reuid=$MPS_UID" "--regid=$MPS_GID" --clear-groups --)
  # a rank's daemon sees its own device only (MPS_DEVICE, up --count N); otherwise every device of the container
  [ -z "${MPS_DEVICE:-}" ] || image_env+=("CUDA_VISIBLE_DEVICES=$MPS_DEVICE")
  env -u CUDA_VISIBLE_DEVICES -u GPU_COSPLAY_SSH_PUBKEY -u MPS_DEVICE "${as_user[@]}" /usr/bin/env "${image_env[@]}" "$MPS_CONTROL" "$@"
}

# Drops the MPS variables so that neither ssh sessions nor login shells point at a daemon that is not there.
mps_off() {
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  MPS_CONTROL=
}

# Arguments: uid gid. Never fails the container: without MPS the session still works, without the hard limits.
start_mps() {
  local uid=$1 gid=$2 pct=${GPU_COSPLAY_MPS_THREAD_PCT:-} limit=${GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB:-} control dir out
  if [ -z "$pct" ] && [ -z "$limit" ]; then
    mps_off
    return 0
  fi
  if ! [[ $pct =~ ^[1-9][0-9]{0,2}$ ]] || [ "$pct" -gt 100 ] || ! [[ $limit =~ ^[1-9][0-9]{0,9}$ ]]; then
    log "warning: GPU_COSPLAY_MPS_THREAD_PCT='$pct' / GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB='$limit' are not 1..100 and a MiB count; MPS not started"
    mps_off; mps_status failed "GPU_COSPLAY_MPS_THREAD_PCT='$pct' / GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB='$limit' are not 1..100 and a MiB count"; return 0
  fi
  # looked up on the image's PATH too: it only names the program, which runs as the session user
  control=${GPU_COSPLAY_MPS_CONTROL:-$(PATH=${GPU_COSPLAY_IMAGE_ENV_PATH:-$PATH} command -v nvidia-cuda-mps-control || true)}
  if [ -z "$control" ] || [ ! -x "$control" ]; then
    log "warning: no ${GPU_COSPLAY_MPS_CONTROL:-nvidia-cuda-mps-control} in this container; MPS not started (SM share and hard VRAM limit off; the torch VRAM cap still applies)"
    mps_off; mps_status unavailable "no ${GPU_COSPLAY_MPS_CONTROL:-nvidia-cuda-mps-control} in this container"; return 0
  fi
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/run/gpu-cosplay/mps/pipe}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/run/gpu-cosplay/mps/log}
  MPS_CONTROL=$control MPS_UID=$uid MPS_GID=$gid
  # up --count N: a daemon per rank, each on its own device, in rank-<i> beside the one-device folders; the session's
  # variables point at rank 0's (the costume points each rank's process at its own)
  local devices=() rank=0 base=${CUDA_MPS_PIPE_DIRECTORY%/pipe}
  base=${base%/rank-0}
  read -r -a devices <<<"${GPU_COSPLAY_MPS_DEVICES:-}"
  if [ "${#devices[@]}" -gt 0 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=$base/rank-0/pipe CUDA_MPS_LOG_DIRECTORY=$base/rank-0/log
    for rank in "${!devices[@]}"; do
      if ! start_daemon "$base/rank-$rank/pipe" "$base/rank-$rank/log" "${devices[$rank]}" "$uid" "$gid" "$pct" "$limit"; then
        stop_mps
        mps_off; mps_status failed "rank $rank: $REPLY"; return 0
      fi
    done
    mps_status running
    log "MPS control daemons started for ${#devices[@]} ranks: ${pct}% active threads, device memory ${limit} MiB each, in $base/rank-*"
    return 0
  fi
  if ! start_daemon "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "" "$uid" "$gid" "$pct" "$limit"; then
    stop_mps
    mps_off; mps_status failed "$REPLY"; return 0
  fi
  mps_status running
  log "MPS control daemon started: ${pct}% active threads, device memory ${limit} MiB, CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY"
}

# One daemon with its limits. Arguments: pipe log device (empty: the container's) uid gid pct limit. Fails with the
# why in REPLY, having stopped a daemon that took no limits (it would serve clients without them).
MPS_PIPES=()
start_daemon() {
  local pipe=$1 log_dir=$2 device=$3 uid=$4 gid=$5 pct=$6 limit=$7 dir out
  for dir in "$pipe" "$log_dir"; do
    # the mode before the owner: root holds no CAP_FOWNER to change a folder it has handed over
    mkdir -p "$dir" && chmod 0700 "$dir" && { [ "$EUID" != 0 ] || chown "$uid:$gid" "$dir"; }
  done
  if ! out=$(CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log_dir MPS_DEVICE=$device mps_control_as_user -d 2>&1); then
    log "warning: $MPS_CONTROL -d failed: ${out//$'\n'/ }; MPS not started"
    REPLY="$MPS_CONTROL -d failed: $out"
    return 1
  fi
  MPS_PIPES+=("$pipe")
  if ! out=$(printf 'set_default_active_thread_percentage %s\nset_default_device_pinned_mem_limit 0 %sM\n' "$pct" "$limit" |
    CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log_dir MPS_DEVICE=$device mps_control_as_user 2>&1); then
    log "warning: MPS limits not accepted: ${out//$'\n'/ }; daemon stopped"
    REPLY="MPS limits not accepted: $out"
    return 1
  fi
}

stop_mps() {
  [ -n "$MPS_CONTROL" ] || return 0
  local out pipe pipes=("${MPS_PIPES[@]}")
  # a shell that did not start them (the daemon of one device): the session's own pipe
  [ "${#pipes[@]}" -gt 0 ] || [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || pipes=("$CUDA_MPS_PIPE_DIRECTORY")
  for pipe in "${pipes[@]}"; do
    out=$(printf 'quit\n' | CUDA_MPS_PIPE_DIRECTORY=$pipe mps_control_as_user 2>&1) || log "warning: MPS quit failed ($pipe): ${out//$'\n'/ }"
  done
  MPS_PIPES=()
  MPS_CONTROL=
}

# Runs the session's foreground process. Without MPS it simply execs it. With MPS the entrypoint stays as its parent:
# tini forwards docker stop's SIGTERM here, and the daemon gets its `quit` before the container goes.
SERVICE_PID=
run_service() {
  [ -n "$MPS_CONTROL" ] || exec "$@"
  "$@" &
  SERVICE_PID=$!
  trap 'on_stop' TERM INT HUP
  local status=0
  wait "$SERVICE_PID" || status=$?
  stop_mps
  exit "$status"
}
on_stop() {
  trap - TERM INT HUP
  stop_mps
  kill -TERM "$SERVICE_PID" 2>/dev/null || true
  wait "$SERVICE_PID" 2>/dev/null || true
  exit 143
}

fresh_host_keys() {
  rm -f /etc/ssh/ssh_host_*
  ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
  ssh-keygen -q -t ecdsa -N '' -f /etc/ssh/ssh_host_ecdsa_key
}

# Started as the session user (a user's own image through the box's engine: its binaries are the user's, so nothing
# of it runs as root): no account to make or hand over, no sudo, no sshd (sessions go through docker exec). The MPS
# daemon runs as this user with its folders under /tmp; the hooks go wherever this user may write. Arguments: uid gid.
setup_unprivileged() {
  local uid=$1 gid=$2
  [ "$EUID" = "$uid" ] || log "warning: running as uid $EUID, not the session's $uid"
  [ -n "${GPU_COSPLAY_MPS_STATUS_FILE:-}" ] || MPS_STATUS_FILE=$ROOT$UNPRIVILEGED_DIR/mps/status
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-$ROOT$UNPRIVILEGED_DIR/mps/pipe}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-$ROOT$UNPRIVILEGED_DIR/mps/log}
  install_python_hooks_once
  start_mps "$uid" "$gid"
  # what `gpu-cosplay up` waits for (UNPRIVILEGED_READY_MARKER in src/core/names.ts)
  mkdir -p "$ROOT$UNPRIVILEGED_DIR" && : >"$ROOT$UNPRIVILEGED_DIR/ready"
  log "running as $uid:$gid, nothing as root; sessions go through docker exec"
}

main() {
  local user=${GPU_COSPLAY_USER:-cosplay} uid=${GPU_COSPLAY_UID:-1000} gid=${GPU_COSPLAY_GID:-${GPU_COSPLAY_UID:-1000}}
  valid_name "$user" || { log "GPU_COSPLAY_USER '$user' is not a valid user name; using 'cosplay'"; user=cosplay; }
  [[ $uid =~ ^[0-9]+$ && $gid =~ ^[0-9]+$ ]] || { log "GPU_COSPLAY_UID/GID must be numbers"; exit 64; }
  [ "$uid" != 0 ] || { log "GPU_COSPLAY_UID=0: refusing to make root the session user"; exit 64; }
  # the sessions' PATH (root's own stays $ROOT_PATH): the image's, the shim first
  local session_path=${GPU_COSPLAY_IMAGE_ENV_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
  case ":$session_path:" in *":$COSPLAY_DIR/bin:"*) ;; *) session_path="$COSPLAY_DIR/bin:$session_path" ;; esac
  export GPU_COSPLAY_IMAGE_ENV_PATH=$session_path
  if [ "$EUID" != 0 ]; then
    setup_unprivileged "$uid" "$gid"
    run_service sleep infinity
  fi

  # ssh-keygen (~10 ms) runs while the user is made
  local keys_pid=
  if [ -x /usr/sbin/sshd ]; then
    fresh_host_keys &
    keys_pid=$!
  fi
  install_python_hooks_once
  ensure_user "$user" "$uid" "$gid"
  local home=$USER_HOME
  take_home "$home"
  install_pubkey "$home"
  grant_sudo "$user"
  start_mps "$uid" "$gid"
  write_session_env "$home" "$uid"
  hand_home_over "$home" "$uid" "$gid"
  claim_workspace "$uid" "$gid"
  # what `gpu-cosplay up` waits for in an image without sshd (container/readiness.ts): the user's home is theirs now
  : >"$ROOT/etc/gpu-cosplay/ready"

  if [ ! -x /usr/sbin/sshd ]; then
    log "no /usr/sbin/sshd in this image; sessions go through docker exec"
    run_service sleep infinity
  fi
  relax_pam_loginuid
  [ -d /run/sshd ] || { mkdir -p /run/sshd && chmod 0755 /run/sshd; }
  wait "$keys_pid"
  write_sshd_config "$user"
  log "user $user ($uid:$gid), starting sshd"
  run_service /usr/sbin/sshd -D -e -f /etc/gpu-cosplay/sshd_config
}

if [ "${GPU_COSPLAY_ENTRYPOINT_LIB:-}" = 1 ]; then
  set +eu
  return 0 2>/dev/null || exit 0
fi
case "${1:-}" in
  # at image build, by the build's root, before there is a container or a user
  --install-hooks)
    install_python_hooks && relax_pam_loginuid
    exit
    ;;
  --fixed-env) shift ;;
  *) fixed_environment "$@" ;;
esac
case "${1:-}" in
  --user-env) write_user_env ;;
  '') main ;;
  *) exec "$@" ;;
esac
