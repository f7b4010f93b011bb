#!/usr/bin/env bash
# Prepares a machine for the Docker end-to-end tests. Idempotent; safe to run on every CI job.
#   1. installs docker.io, debootstrap, sudo and prometheus when missing;
#   2. starts dockerd when none answers, with test/e2e/bin on its PATH so that the stub
#      nvidia-container-runtime-hook is found and dockerd registers its `nvidia` device driver;
#   3. builds the local base image gpu-cosplay-test-base:bookworm with debootstrap when absent
#      (the rootfs tarball is cached under $GPU_COSPLAY_E2E_CACHE, default /var/cache/gpu-cosplay-e2e);
#   4. creates the non-root test users `cosplayer` (uid 1234) and `cosplayer2` (uid 1235, the teammate) in the docker group.
# Environment: GPU_COSPLAY_E2E_MIRROR (Debian mirror), GPU_COSPLAY_E2E_DOCKERD_LOG (dockerd log file).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BASE_IMAGE=gpu-cosplay-test-base:bookworm
CACHE=${GPU_COSPLAY_E2E_CACHE:-/var/cache/gpu-cosplay-e2e}
MIRROR=${GPU_COSPLAY_E2E_MIRROR:-http://deb.debian.org/debian}
DOCKERD_LOG=${GPU_COSPLAY_E2E_DOCKERD_LOG:-/var/log/gpu-cosplay-e2e-dockerd.log}
TEST_USER=cosplayer
TEST_UID=1234
TEST_USER2=cosplayer2
TEST_UID2=1235

say() { printf 'setup-docker: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "needs root (or sudo)"
  exec sudo -E bash "$0" "$@"
fi

# 1. packages
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v visudo >/dev/null || missing+=(sudo)  # run.sh gives the test users a sudo rule for the simulator
command -v prometheus >/dev/null || missing+=(prometheus)  # metrics-prometheus.test.ts scrapes `gpu-cosplay metrics`
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. the docker group exists before dockerd starts, so the socket is group-owned by it
getent group docker >/dev/null || groupadd --system docker

# 3. dockerd
# A dockerd an earlier run started from another checkout finds no stub hook once that checkout is gone (it
# registers the nvidia driver at start-up only): one of ours (plain `dockerd --group docker`) whose PATH has no
# hook any more is stopped and started again from here.
hook_reachable() {
  local pid path dir
  pid=$(pgrep -xo dockerd) || return 1
  path=$(tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null | sed -n 's/^PATH=//p')
  local IFS=:
  for dir in $path; do [ -x "$dir/nvidia-container-runtime-hook" ] && return 0; done
  return 1
}
if docker info >/dev/null 2>&1 && ! hook_reachable && [ "$(tr '\0' ' ' </proc/"$(pgrep -xo dockerd)"/cmdline 2>/dev/null)" = "dockerd --group docker " ]; then
  say "restarting dockerd: its stub hook is gone"
  kill "$(pgrep -xo dockerd)"
  for _ in $(seq 1 60); do pgrep -x dockerd >/dev/null || break; sleep 0.5; done
fi
if docker info >/dev/null 2>&1; then
  say "dockerd already answers"
  hook_reachable || say "note: this dockerd has no nvidia-container-runtime-hook on its PATH; nvidia DeviceRequests need the stub hook"
else
  say "starting dockerd (log: $DOCKERD_LOG)"
  mkdir -p "$(dirname "$DOCKERD_LOG")"
  # setsid + nohup: dockerd outlives this script and the CI step that ran it. It must not inherit our other file
  # descriptors: under `flock /tmp/e2e.lock npm run test:e2e` one of them is the lock, which dockerd would then hold
  # for as long as it runs, and every later suite would wait for it forever.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    PATH="$HERE/bin:$PATH" exec setsid nohup dockerd --group docker >>"$DOCKERD_LOG" 2>&1 </dev/null
  ) &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { tail -n 30 "$DOCKERD_LOG" >&2; die "dockerd did not answer within 60 s"; }
  say "dockerd is up"
fi

# 4. base image
if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  say "$BASE_IMAGE present"
else
  mkdir -p "$CACHE"
  tarball="$CACHE/bookworm-minbase-rootfs.tar"
  if [ ! -s "$tarball" ]; then
    rootfs=$(mktemp -d /var/tmp/gpu-cosplay-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' EXIT
    say "debootstrap bookworm into $rootfs (about 40-90 s)"
    debootstrap --variant=minbase --include=openssh-server,python3 bookworm "$rootfs" "$MIRROR" \
      >"$CACHE/debootstrap.log" 2>&1 || { tail -n 30 "$CACHE/debootstrap.log" >&2; die "debootstrap failed"; }
    # No baked host keys and no apt lists in the base: the image under test brings its own.
    rm -f "$rootfs"/etc/ssh/ssh_host_* 
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
    trap - EXIT
  fi
  say "importing $tarball as $BASE_IMAGE"
  docker import --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$tarball" "$BASE_IMAGE" >/dev/null
fi

# 5. where tests keep simulator state the stub hook should show inside containers (see bin/nvidia-container-runtime-hook)
mkdir -p /var/tmp/gpu-cosplay-sim && chmod 1777 /var/tmp/gpu-cosplay-sim

# 6. test users
for entry in "$TEST_USER:$TEST_UID" "$TEST_USER2:$TEST_UID2"; do
  name=${entry%%:*} uid=${entry##*:}
  if ! id "$name" >/dev/null 2>&1; then
    say "creating user $name ($uid)"
    useradd --create-home --uid "$uid" --shell /bin/bash "$name"
  fi
  id -nG "$name" | tr ' ' '\n' | grep -qx docker || usermod -aG docker "$name"
done

say "ready"
