#!/usr/bin/env bash
# Proves the container pieces by hand, without the TypeScript CLI:
#   setup-docker.sh, `docker build` of docker/Dockerfile on the local Debian base, a container created through
#   the Engine API with a real nvidia DeviceRequest (the stub hook answers it), ssh in as the user, checks,
#   removal. Prints the size of the layers the Dockerfile adds and the time to the first ssh login.
# Usage: sudo bash test/e2e/smoke.sh        (needs curl, ssh, ssh-keygen on the host)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BASE=gpu-cosplay-test-base:bookworm
IMAGE=gpu-cosplay:smoke
SESSION=smoke-$$-$(date +%s)
NAME=gpu-cosplay-$SESSION
USER_NAME=cosplayer USER_UID=1234 USER_GID=1234
SOCK=/var/run/docker.sock
WORK=$(mktemp -d /tmp/gpu-cosplay-smoke.XXXXXX)
FAILED=0

say() { printf '\n== %s\n' "$*"; }
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then printf 'ok   %s\n' "$1"; else printf 'FAIL %s: expected [%s], got [%s]\n' "$1" "$2" "$3"; FAILED=1; fi
}
cleanup() {
  ids=$(docker ps -aq --filter "label=io.gpu-cosplay.session=$SESSION")
  [ -z "$ids" ] || docker rm -f $ids >/dev/null
  rm -rf "$WORK" "${GPU_COSPLAY_SIM_STATE:-/nonexistent}"*
}
trap cleanup EXIT

bash "$HERE/setup-docker.sh"

say "build $IMAGE on $BASE"
docker build -q -f "$REPO/docker/Dockerfile" --build-arg BASE_IMAGE=$BASE --build-arg VERSION=smoke -t $IMAGE "$REPO" >/dev/null
base_bytes=$(docker image inspect -f '{{.Size}}' $BASE)
image_bytes=$(docker image inspect -f '{{.Size}}' $IMAGE)
echo "layers added by docker/Dockerfile: $(( (image_bytes - base_bytes) / 1024 )) KiB"
docker history --format '  {{.Size}}\t{{.CreatedBy}}' $IMAGE | head -n "$(( $(docker history -q $IMAGE | wc -l) - $(docker history -q $BASE | wc -l) ))" | cut -c1-110
check "label io.gpu-cosplay.image" 1 "$(docker image inspect -f '{{index .Config.Labels "io.gpu-cosplay.image"}}' $IMAGE)"

say "simulated H200 with one 1g.18gb MIG device (state in /var/tmp/gpu-cosplay-sim, where the stub hook looks)"
export GPU_COSPLAY_SIM_STATE=/var/tmp/gpu-cosplay-sim/$SESSION.json
SIM=("$REPO/test/sim/nvidia-smi")
"${SIM[@]}" --sim-init --model h200 --gpus 1 >/dev/null
"${SIM[@]}" -i 0 -mig 1 >/dev/null
"${SIM[@]}" mig -i 0 -cgi 19 -C >/dev/null
MIG=$("${SIM[@]}" -L | grep -o 'MIG-[0-9a-f-]*' | head -n1)
echo "MIG device: $MIG"

ssh-keygen -q -t ed25519 -N '' -C smoke -f "$WORK/key"
mkdir "$WORK/ws" && chown $USER_UID:$USER_GID "$WORK/ws"
# Values meant to break naive quoting: every one must arrive verbatim and run nothing.
TRAP_VALUE='it'"'"'s "quoted" $(touch '"$WORK"'/pwned) `touch '"$WORK"'/pwned2` $HOME \ back;slash'
NEWLINE_VALUE=$'line1\nGPU_COSPLAY_INJECTED=1'

say "create + start $NAME through the Engine API (DeviceRequests with $MIG)"
spec=$(python3 - "$IMAGE" "$SESSION" "$MIG" "$WORK" "$TRAP_VALUE" "$NEWLINE_VALUE" "$USER_NAME" "$USER_UID" "$USER_GID" <<'PY'
import json, sys
image, session, mig, work, trap, newline, user, uid, gid = sys.argv[1:]
print(json.dumps({
  'Image': image,
  'Labels': {'io.gpu-cosplay.session': session},
  'Env': ['GPU_COSPLAY_USER=' + user, 'GPU_COSPLAY_UID=' + uid, 'GPU_COSPLAY_GID=' + gid,
          'GPU_COSPLAY_SSH_PUBKEY=' + open(work + '/key.pub').read().strip(),
          'GPU_COSPLAY_NAME=NVIDIA GeForce RTX 3090', 'GPU_COSPLAY_VRAM_MIB=24576',
          'GPU_COSPLAY_TRAP=' + trap, 'GPU_COSPLAY_NEWLINE=' + newline,
          'NVIDIA_VISIBLE_DEVICES=' + mig, 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'],
  'ExposedPorts': {'22/tcp': {}},
  'HostConfig': {
    'PortBindings': {'22/tcp': [{'HostIp': '127.0.0.1', 'HostPort': ''}]},
    'Binds': [work + '/ws:/workspace'],
    'ShmSize': 256 * 1024 * 1024,
    'DeviceRequests': [{'Driver': 'nvidia', 'DeviceIDs': [mig], 'Capabilities': [['gpu', 'compute', 'utility']]}],
  },
}))
PY
)
api() { curl -sS --fail-with-body --unix-socket $SOCK -H 'Content-Type: application/json' "$@"; }
id=$(api -X POST -d "$spec" "http://localhost/containers/create?name=$NAME" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Id"])')
t0=$(date +%s%N)
api -X POST "http://localhost/containers/$id/start"
port=$(docker port "$id" 22/tcp | head -n1 | sed 's/.*://')
SSH=(ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=2 -i "$WORK/key" -p "$port" "$USER_NAME@127.0.0.1")
tries=0
until "${SSH[@]}" true 2>/dev/null; do
  tries=$((tries + 1))
  [ $tries -lt 200 ] || { docker logs "$id"; echo "FAIL: no ssh login within ~10 s"; exit 1; }
  sleep 0.05
done
echo "first ssh login $(( ($(date +%s%N) - t0) / 1000000 )) ms after start (attempts refused: $tries)"

say "checks"
check "hook ran for this container" 1 "$(grep -c "prestart id=$id" /tmp/gpu-cosplay-hook.log)"
check "ssh: id -u" $USER_UID "$("${SSH[@]}" id -u)"
check "ssh (non-login): GPU_COSPLAY_NAME" "NVIDIA GeForce RTX 3090" "$("${SSH[@]}" 'printf %s "$GPU_COSPLAY_NAME"')"
check "ssh (non-login): NVIDIA_VISIBLE_DEVICES" "$MIG" "$("${SSH[@]}" 'printf %s "$NVIDIA_VISIBLE_DEVICES"')"
check "ssh (non-login): trap value verbatim" "$TRAP_VALUE" "$("${SSH[@]}" 'printf %s "$GPU_COSPLAY_TRAP"')"
check "ssh (login shell): trap value verbatim" "$TRAP_VALUE" "$("${SSH[@]}" "bash -lc 'printf %s \"\$GPU_COSPLAY_TRAP\"'")"
check "ssh (login shell): newline value verbatim" "$NEWLINE_VALUE" "$("${SSH[@]}" "bash -lc 'printf %s \"\$GPU_COSPLAY_NEWLINE\"'")"
check "ssh: no injected variable" "" "$("${SSH[@]}" 'bash -lc "printenv GPU_COSPLAY_INJECTED"' || true)"
check "nothing ran from a value" "no" "$(ls "$WORK"/pwned* >/dev/null 2>&1 && echo yes || echo no)"
check "exec: simulated /usr/bin/nvidia-smi -L lists the MIG device" 1 "$(docker exec "$id" /usr/bin/nvidia-smi -L | grep -c "$MIG")"
check "exec: it shows one GPU" 1 "$(docker exec "$id" /usr/bin/nvidia-smi -L | grep -c '^GPU ')"
check "ssh: nvidia-smi (the shim, first on PATH) wears the costume" 1 "$("${SSH[@]}" nvidia-smi -L | grep -c 'RTX 3090')"
check "exec: GPU_COSPLAY_NAME" "NVIDIA GeForce RTX 3090" "$(docker exec -u $USER_UID "$id" printenv GPU_COSPLAY_NAME)"
check "exec: NVIDIA_VISIBLE_DEVICES" "$MIG" "$(docker exec "$id" printenv NVIDIA_VISIBLE_DEVICES)"
check "exec: trap value verbatim" "$TRAP_VALUE" "$(docker exec "$id" printenv GPU_COSPLAY_TRAP)"
check "ssh: root login refused" refused "$(ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i "$WORK/key" -p "$port" root@127.0.0.1 true 2>/dev/null && echo allowed || echo refused)"
check "sshd: no password auth" "passwordauthentication no" "$(docker exec "$id" /usr/sbin/sshd -T -f /etc/gpu-cosplay/sshd_config -C user=$USER_NAME,host=x,addr=127.0.0.1 | grep -i '^passwordauthentication')"
"${SSH[@]}" 'echo hi > /workspace/from-ssh.txt'
check "file written over ssh is the user's on the host" "$USER_UID:$USER_GID" "$(stat -c %u:%g "$WORK/ws/from-ssh.txt")"
check "authorized_keys mode" "600 $USER_UID" "$(docker exec "$id" stat -c '%a %u' /home/$USER_NAME/.ssh/authorized_keys)"

say "remove"
docker rm -f "$id" >/dev/null
check "nothing labelled left" "" "$(docker ps -aq --filter "label=io.gpu-cosplay.session=$SESSION")"

[ $FAILED = 0 ] && echo "smoke: all checks passed" || { echo "smoke: FAILED"; exit 1; }
