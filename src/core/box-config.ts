/**
 * The shared box's installation (`gpu-cosplay system install`): one root-owned configuration file fixes the state
 * directory and the programs root runs. Unprivileged members of the box's group reach the privileged engine (this
 * same CLI, run as root through one exact sudoers rule) and never choose what it runs or reads.
 */
import {HOST_ENV} from './names.js'
import {byteSizeOf} from './units.js'

export const BOX_CONFIG_DIR = '/etc/gpu-cosplay'
export const BOX_CONFIG_FILE = `${BOX_CONFIG_DIR}/config.yaml`
/**
 * Marks the engine process: `caller` is set by the entry point the sudoers rule names (sudo resets the caller's
 * environment and the entry point clears the rest, so only root's entry point sets it; the caller is sudo's SUDO_UID),
 * `root` by bin/run.js for root itself at a shell of an installed box (the caller is root); `member` marks a member's
 * own client process (not the engine: it runs as the member).
 */
export const ENGINE_ENV = 'GPU_COSPLAY_ENGINE'

/** What /etc/gpu-cosplay/config.yaml holds (read and validated by read-box-config.ts). */
export type BoxConfig = {
  readonly version: 1
  /** members may use the engine */
  readonly group: string
  readonly stateDir: string
  readonly nvidiaSmi: string
  readonly mpsControl: string | null
  /** the root-owned entry point the sudoers rule names */
  readonly engine: string
  /** `up --sudo` may give the session user sudo in the container (and with it root over their mounts) */
  readonly allowContainerSudo: boolean
  /**
   * Fair share (all optional, absent: no limit; see apply/session-policy.ts). Durations as typed (`8h`, `90s`): the TTL an
   * `up` without --ttl gets, the longest one it may ask for (and extend to), and how long a session may sit idle.
   */
  readonly defaultTtl?: string | null
  readonly maxTtl?: string | null
  readonly idleReclaim?: string | null
  readonly quotas?: BoxQuotas
  /**
   * What one member's session container may take (absent: CONTAINER_LIMIT_DEFAULTS; null: no limit): its memory, swap
   * included (a size such as `64g`), its processes and threads, and the largest /dev/shm its `up --shm-size` may ask.
   */
  readonly containerMemory?: string | null
  readonly containerPids?: number | null
  readonly shmSizeMax?: string | null
}

/**
 * The limits a member's container gets where the configuration says nothing. /dev/shm is a tmpfs charged to the
 * container's memory: the shm ceiling leaves most of the memory to the workload, and 16 GiB of shared memory is room
 * for NCCL's shared-memory transport between the ranks of a node (a few hundred MiB per pair of ranks) and PyTorch's
 * DataLoader workers. 8192 processes and threads: torch starts a thread per core in every worker.
 */
export const CONTAINER_LIMIT_DEFAULTS = {containerMemory: '64g', containerPids: 8192, shmSizeMax: '16g'} as const

/** The container limits of a box in bytes and counts (null: none). */
export type ContainerLimits = {readonly memoryBytes: number | null; readonly pidsLimit: number | null; readonly shmSizeMaxBytes: number | null}

export function containerLimitsOf(config: BoxConfig): ContainerLimits {
  const size = (value: string | null) => (value === null ? null : byteSizeOf(value))
  return {
    memoryBytes: size(config.containerMemory === undefined ? CONTAINER_LIMIT_DEFAULTS.containerMemory : config.containerMemory),
    pidsLimit: config.containerPids === undefined ? CONTAINER_LIMIT_DEFAULTS.containerPids : config.containerPids,
    shmSizeMaxBytes: size(config.shmSizeMax === undefined ? CONTAINER_LIMIT_DEFAULTS.shmSizeMax : config.shmSizeMax),
  }
}

/** How much one user may hold at once (null or absent: no limit). */
export type QuotaLimits = {readonly sessions?: number | null; readonly slices?: number | null}

/** The box's default for every member, with overrides per group (its members each get it) and per user. */
export type BoxQuotas = QuotaLimits & {
  readonly groups?: Readonly<Record<string, QuotaLimits>>
  readonly users?: Readonly<Record<string, QuotaLimits>>
}

/** The variables that make a user's own sandbox: with any of them set, nothing goes through the engine. */
export const SANDBOX_ENV = [HOST_ENV.stateDir, HOST_ENV.nvidiaSmi, HOST_ENV.mpsControl] as const

export function isSandbox(env: Readonly<Record<string, string | undefined>>): boolean {
  return SANDBOX_ENV.some((name) => (env[name] ?? '') !== '')
}

/** Sets the three paths the layers read from the configuration (a client's local reads, root at a shell). */
export function pinBoxPaths(config: BoxConfig, env: NodeJS.ProcessEnv = process.env): void {
  env[HOST_ENV.stateDir] = config.stateDir
  env[HOST_ENV.nvidiaSmi] = config.nvidiaSmi
  if (config.mpsControl !== null) env[HOST_ENV.mpsControl] = config.mpsControl
  else delete env[HOST_ENV.mpsControl]
}

/**
 * In the engine, the variables every layer already reads come from the configuration alone: the state directory
 * and the two programs root runs. Nothing of the caller's reaches here (the entry point starts node with `env -i`).
 */
export function pinEngineEnvironment(config: BoxConfig, env: NodeJS.ProcessEnv = process.env): void {
  for (const name of Object.keys(env)) if (name.startsWith('GPU_COSPLAY_') && name !== ENGINE_ENV && name !== 'GPU_COSPLAY_CANCEL_ON_EOF') delete env[name]
  pinBoxPaths(config, env)
}
