/** Strings shared across layers: labels, environment variables, journal step kinds. */

export const LABEL_PREFIX = 'io.gpu-cosplay'
export const LABELS = {
  session: `${LABEL_PREFIX}.session`,
  owner: `${LABEL_PREFIX}.owner`,
  target: `${LABEL_PREFIX}.target`,
  hostGpu: `${LABEL_PREFIX}.host-gpu`,
  gpuUuid: `${LABEL_PREFIX}.gpu-uuid`,
  migUuid: `${LABEL_PREFIX}.mig-uuid`,
  image: `${LABEL_PREFIX}.image`,
  version: `${LABEL_PREFIX}.version`,
  /** a throwaway container, created and never started, that `up` looks into an image through */
  probe: `${LABEL_PREFIX}.probe`,
} as const

/** Shared by every user on the box, so that sessions of different users see each other's leases. */
export const SHARED_STATE_DIR = '/var/lib/gpu-cosplay'

/** Variables the tool itself reads on the host. */
export const HOST_ENV = {
  nvidiaSmi: 'GPU_COSPLAY_NVIDIA_SMI',
  mpsControl: 'GPU_COSPLAY_MPS_CONTROL',
  stateDir: 'GPU_COSPLAY_STATE_DIR',
  catalogDir: 'GPU_COSPLAY_CATALOG_DIR',
  dockerHost: 'DOCKER_HOST',
  /** the interpreter (with CUDA torch) that `calibrate` measures with; default python3 */
  python: 'GPU_COSPLAY_PYTHON',
  /** test-only: a step kind the journal runner pauses after (see apply/journal.ts) */
  testPauseAfterStep: 'GPU_COSPLAY_TEST_PAUSE_AFTER_STEP',
} as const

/** The contract with runtime-hooks/: what the container sees. Booleans are "1"/"0"; VRAM figures are binary. */
export const COSTUME_ENV = {
  card: 'GPU_COSPLAY_CARD',
  name: 'GPU_COSPLAY_NAME',
  vramGB: 'GPU_COSPLAY_VRAM_GB',
  vramMiB: 'GPU_COSPLAY_VRAM_MIB',
  physVramMiB: 'GPU_COSPLAY_PHYS_VRAM_MIB',
  /** what the card reports to CUDA (torch total_memory), and what torch's allocator may hold (never above the hard limit) */
  cudaTotalMiB: 'GPU_COSPLAY_CUDA_TOTAL_MIB',
  allocCapMiB: 'GPU_COSPLAY_ALLOC_CAP_MIB',
  tdpW: 'GPU_COSPLAY_TDP_W',
  fp32Tflops: 'GPU_COSPLAY_FP32_TFLOPS',
  bf16Tflops: 'GPU_COSPLAY_BF16_TFLOPS',
  bandwidthGBs: 'GPU_COSPLAY_BW_GBS',
  hasBf16: 'GPU_COSPLAY_HAS_BF16',
  hasTf32: 'GPU_COSPLAY_HAS_TF32',
  session: 'GPU_COSPLAY_SESSION',
  /** per-session MPS limits; the entrypoint starts the session's daemon with them (absent: no MPS) */
  mpsThreadPct: 'GPU_COSPLAY_MPS_THREAD_PCT',
  mpsPinnedMemLimitMiB: 'GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB',
  /** up --count N: each rank's device and MPS pipe, JSON [{uuid, mpsPipe}] in ordinal order (runtime-hooks/README.md) */
  ranks: 'GPU_COSPLAY_RANKS',
} as const

/** Where a container's MPS daemon keeps its pipe and log (the entrypoint makes them, owned by the session user). */
export const CONTAINER_MPS_DIRS = {pipe: '/run/gpu-cosplay/mps/pipe', log: '/run/gpu-cosplay/mps/log'} as const
/** up --count N: rank i's MPS daemon in the container (each rank its own daemon, on its own device). */
export function containerRankMpsDirs(rank: number, base: {readonly pipe: string; readonly log: string} = CONTAINER_MPS_DIRS): {pipe: string; log: string} {
  const root = base.pipe.replace(/\/pipe$/, '')
  return {pipe: `${root}/rank-${rank}/pipe`, log: `${root}/rank-${rank}/log`}
}
/** The same for a container where nothing runs as root: folders its user can make. */
export const UNPRIVILEGED_MPS_DIRS = {pipe: '/tmp/gpu-cosplay/mps/pipe', log: '/tmp/gpu-cosplay/mps/log'} as const
/**
 * The entrypoint's one line on the session's MPS daemon, written before sshd starts (or the ready marker): `running`,
 * or `unavailable: <why>` / `failed: <why>` (container/mps-readiness.ts reads it; gpu_cosplay_perf.py records it).
 */
export const CONTAINER_MPS_STATUS_FILE = '/run/gpu-cosplay/mps/status'
export const UNPRIVILEGED_MPS_STATUS_FILE = '/tmp/gpu-cosplay/mps/status'
/** What the entrypoint writes once a container where nothing runs as root is set up (readiness waits for it). */
export const UNPRIVILEGED_READY_MARKER = '/tmp/gpu-cosplay/ready'
/** The same for the root entrypoint of an image without sshd: the session user is made and their home handed over. */
export const CONTAINER_READY_MARKER = '/etc/gpu-cosplay/ready'

export const STEP_KINDS = [
  'set-persistence',
  'enable-mig',
  'create-gi',
  'lock-clocks',
  'set-power-limit',
  'start-mps',
  'stage-mounts',
  'start-container',
] as const
export type StepKind = (typeof STEP_KINDS)[number]

export const DEBUG_NS = {
  host: 'gpu-cosplay:host',
  apply: 'gpu-cosplay:apply',
  container: 'gpu-cosplay:container',
  catalog: 'gpu-cosplay:catalog',
} as const

/** The most devices one session may ask for (up/plan --count; an 8-GPU box of 7 slices each is 56). */
export const COUNT_MAX = 64
