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
} as const

/** Variables the tool itself reads on the host. */
export const HOST_ENV = {
  nvidiaSmi: 'GPU_COSPLAY_NVIDIA_SMI',
  stateDir: 'GPU_COSPLAY_STATE_DIR',
  catalogDir: 'GPU_COSPLAY_CATALOG_DIR',
  dockerHost: 'DOCKER_HOST',
} as const

/** The contract with runtime-hooks/: what the container sees. Booleans are "1"/"0"; VRAM figures are binary. */
export const COSTUME_ENV = {
  card: 'GPU_COSPLAY_CARD',
  name: 'GPU_COSPLAY_NAME',
  vramGB: 'GPU_COSPLAY_VRAM_GB',
  vramMiB: 'GPU_COSPLAY_VRAM_MIB',
  physVramMiB: 'GPU_COSPLAY_PHYS_VRAM_MIB',
  tdpW: 'GPU_COSPLAY_TDP_W',
  fp32Tflops: 'GPU_COSPLAY_FP32_TFLOPS',
  bf16Tflops: 'GPU_COSPLAY_BF16_TFLOPS',
  bandwidthGBs: 'GPU_COSPLAY_BW_GBS',
  hasBf16: 'GPU_COSPLAY_HAS_BF16',
  hasTf32: 'GPU_COSPLAY_HAS_TF32',
  session: 'GPU_COSPLAY_SESSION',
} as const

export const STEP_KINDS = ['set-persistence', 'enable-mig', 'create-gi', 'create-ci', 'lock-clocks', 'set-power-limit', 'start-container'] as const
export type StepKind = (typeof STEP_KINDS)[number]

export const DEBUG_NS = {
  host: 'gpu-cosplay:host',
  apply: 'gpu-cosplay:apply',
  container: 'gpu-cosplay:container',
  catalog: 'gpu-cosplay:catalog',
} as const
