#!/usr/bin/env bash
# npm run test:e2e: the Docker end-to-end tests, on a clean machine, as root.
#   1. setup-docker.sh: docker.io + debootstrap, dockerd with the stub nvidia hook, the Debian base image,
#      the non-root test users `cosplayer` (uid 1234) and `cosplayer2` (1235) in the docker group;
#   2. passwordless sudo for both for exactly the simulator's path, keeping GPU_COSPLAY_SIM_STATE, so
#      the CLI changes the (simulated) GPU the way a non-root user does on a real box (`sudo -n nvidia-smi`);
#   3. the built CLI, then jest's e2e project (every CLI call runs as cosplayer);
#   4. nothing labelled io.gpu-cosplay.* may remain.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO"
if [ "$(id -u)" -ne 0 ]; then exec sudo -E bash "$0" "$@"; fi

bash "$HERE/setup-docker.sh"

SIM="$REPO/test/sim/nvidia-smi"
SUDOERS=/etc/sudoers.d/gpu-cosplay-e2e
cat >"$SUDOERS.tmp" <<RULES
# gpu-cosplay e2e: the test user may change the simulated GPU, as a real user may run nvidia-smi via sudo
Defaults!$SIM env_keep += "GPU_COSPLAY_SIM_STATE"
cosplayer ALL=(root) NOPASSWD: $SIM
cosplayer2 ALL=(root) NOPASSWD: $SIM
RULES
chmod 0440 "$SUDOERS.tmp"
visudo -cqf "$SUDOERS.tmp" && mv "$SUDOERS.tmp" "$SUDOERS"

# An earlier run that was killed (a CI job cut off, a session ended) can leave its sessions behind: containers
# that dockerd brings back and staging bind mounts that keep the e2e state directories busy. Only what the tests
# make is cleared (sessions on the test base image, mounts under the e2e state dirs): a real session on the same
# machine is never touched (step 4 still fails on it).
stale=$(docker ps -aq --filter label=io.gpu-cosplay.session --filter label=io.gpu-cosplay.image.base=gpu-cosplay-test-base:bookworm)
if [ -n "$stale" ]; then
  echo "e2e: removing containers an interrupted run left: $(echo $stale)" >&2
  docker rm -f $stale >/dev/null
fi
for dir in /var/lib/gpu-cosplay-e2e /var/lib/gpu-cosplay-e2e-sim; do
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    echo "e2e: unmounting $m, left by an interrupted run" >&2
    umount -l "$m"
  done
done

[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build --silent

status=0
node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects e2e --runInBand "$@" || status=$?

left=$(docker ps -a --format '{{.ID}} {{.Labels}}' | grep 'io\.gpu-cosplay\.' || true)
if [ -n "$left" ]; then
  echo "e2e: containers labelled io.gpu-cosplay.* remain:" >&2
  echo "$left" >&2
  status=1
else
  echo "e2e: nothing labelled io.gpu-cosplay.* remains"
fi
exit $status
