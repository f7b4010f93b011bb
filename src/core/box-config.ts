/**
 * The shared box's installation (`gpu-cosplay system install`): one root-owned configuration file fixes the state
 * directory and the programs root runs. Unprivileged members of the box's group reach the privileged engine (this
 * same CLI, run as root through one exact sudoers rule) and never choose what it runs or reads.
 */
import fs from 'node:fs'

import {load} from 'js-yaml'
import {z} from 'zod'

import {HOST_ENV} from './names.js'

export const BOX_CONFIG_DIR = '/etc/gpu-cosplay'
export const BOX_CONFIG_FILE = `${BOX_CONFIG_DIR}/config.yaml`
/**
 * Marks the engine process: `caller` is set by the entry point the sudoers rule names (sudo resets the caller's
 * environment and the entry point clears the rest, so only root's entry point sets it; the caller is sudo's SUDO_UID),
 * `root` by bin/run.js for root itself at a shell of an installed box (the caller is root).
 */
export const ENGINE_ENV = 'GPU_COSPLAY_ENGINE'
export type EngineMark = 'caller' | 'root'

const absolutePath = z.string().regex(/^\/[^\0\n]*$/, 'an absolute path')

export const BoxConfigSchema = z.strictObject({
  version: z.literal(1),
  /** members may use the engine */
  group: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/),
  stateDir: absolutePath,
  nvidiaSmi: absolutePath,
  mpsControl: absolutePath.nullable(),
  /** the root-owned entry point the sudoers rule names */
  engine: absolutePath,
  /** `up --sudo` may give the session user sudo in the container (and with it root over their mounts) */
  allowContainerSudo: z.boolean(),
})
export type BoxConfig = z.infer<typeof BoxConfigSchema>

export type BoxConfigRead = {ok: true; config: BoxConfig} | {ok: false; why: string} | null

/**
 * The installation's configuration: null when the box has none, else the config or why it cannot be trusted
 * (not a regular root-owned file that only root can write, or not valid).
 */
export function readBoxConfig(file: string = BOX_CONFIG_FILE): BoxConfigRead {
  let fd: number
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return null
    return {ok: false, why: code === 'ELOOP' ? `${file} is a symlink` : `${file} cannot be read (${code ?? 'error'})`}
  }
  try {
    const info = fs.fstatSync(fd)
    if (!info.isFile()) return {ok: false, why: `${file} is not a regular file`}
    if (info.uid !== 0 || (info.mode & 0o022) !== 0) {
      return {ok: false, why: `${file} must belong to root and be writable by root alone (owner uid ${info.uid}, mode ${(info.mode & 0o777).toString(8)})`}
    }
    let raw: unknown
    try {
      raw = load(fs.readFileSync(fd, 'utf8'))
    } catch (error) {
      return {ok: false, why: `${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}`}
    }
    const parsed = BoxConfigSchema.safeParse(raw)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      return {ok: false, why: `${file}: field "${issue.path.map(String).join('.')}": ${issue.message}`}
    }
    return {ok: true, config: parsed.data}
  } finally {
    fs.closeSync(fd)
  }
}

let engineConfig: BoxConfig | null | undefined

/**
 * The configuration when this process is the engine: root, started through the installed entry point. Null for
 * everyone else (a user's own sandbox, root at a shell without an installation).
 */
export function engineBoxConfig(env: Readonly<Record<string, string | undefined>> = process.env): BoxConfig | null {
  if (engineConfig !== undefined) return engineConfig
  const mark = env[ENGINE_ENV]
  const read = process.getuid?.() === 0 && (mark === 'caller' || mark === 'root') ? readBoxConfig() : null
  engineConfig = read?.ok ? read.config : null
  return engineConfig
}

/** Whether this process is the engine: root on an installed box, for a caller or for itself (see engineBoxConfig). */
export function isEngine(): boolean {
  return engineBoxConfig() !== null
}

/** Whether the engine acts for a caller who came through the sudoers rule (not for root itself). */
export function actsForCaller(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return isEngine() && env[ENGINE_ENV] === 'caller'
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

/** tests only */
export function forgetEngineConfig(): void {
  engineConfig = undefined
}
