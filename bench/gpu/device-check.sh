#!/usr/bin/env bash
# The GPU checks a device machine runs in one go (issue 19.8 MPS sweep, issue 21 verify --perf's measurement on a
# real GPU). Reads the GPU and starts MPS daemons of its own only; changes no MIG, clock, power, persistence or
# compute mode. Usage: bash bench/gpu/device-check.sh OUT_DIR
set -u
out=${1:?OUT_DIR}
export PYTHONUNBUFFERED=1
{
  date -u; uname -r; nvidia-smi; nvidia-smi -L
  command -v nvidia-cuda-mps-control || ls /usr/local/nvidia/bin
  nvidia-smi -q | sed -n '1,40p'
} >"$out/host.txt" 2>&1
timeout 330 python3 bench/gpu/mps_sweep.py "$out" 2>&1 | tee "$out/sweep.log"
echo "== perf, whole GPU"
timeout 90 python3 runtime-hooks/gpu_cosplay_perf.py --device cuda >"$out/perf-whole.json" 2>"$out/perf-whole.err"
echo "rc $?"; head -c 1500 "$out/perf-whole.json"
echo "== perf under an MPS daemon of its own: 50% and a 16 GiB pinned limit"
mps=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
d=$(mktemp -d); export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log; mkdir -p $d/pipe $d/log
if "$mps" -d; then
  printf 'set_default_active_thread_percentage 50\nset_default_device_pinned_mem_limit 0 16384M\n' | "$mps"
  GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB=16384 timeout 90 python3 runtime-hooks/gpu_cosplay_perf.py --device cuda >"$out/perf-mps50.json" 2>"$out/perf-mps50.err"
  echo "rc $?"; head -c 1500 "$out/perf-mps50.json"
  echo quit | "$mps"
fi
