/**
 * `system install` and `system uninstall`: the shared box's group, root-owned state directory, configuration,
 * entry point and sudoers rule. Idempotent: a second install changes only what differs, and keeps the settings it is
 * not given.
 */
import fs from 'node:fs'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'

import {dump} from 'js-yaml'

import {listSessions} from '../apply/book-store.js'
import {BOX_CONFIG_DIR, BOX_CONFIG_FILE, type BoxConfig, CONTAINER_LIMIT_DEFAULTS} from '../core/box-config.js'
import {readBoxConfig} from '../core/read-box-config.js'
import {SHARED_STATE_POLICY, statePolicyOf} from '../core/state-policy.js'
import {parseDuration} from '../core/duration.js'
import {InputError, StateError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'
import {findExecutable} from '../core/find-executable.js'
import {LocalExecutor} from '../core/local-executor.js'
import {ensureDirMode} from '../core/settle-dir.js'
import {SHARED_STATE_DIR} from '../core/names.js'
import {packageRoot} from '../core/package-root.js'
import {byteSizeOf} from '../core/units.js'
import {groupExists} from '../core/user-groups.js'
import {ENGINE_STATE_FOLDERS, INSTALLED_STATE_FOLDERS} from '../core/state-layout.js'
import {ENGINE_PATH, isPlainPath, renderEntryPoint, renderSudoers, SETSID, SUDOERS_PATH} from './entry-point.js'
import {installReaper, removeReaper, rootCommand} from './reaper-timer.js'
import {whyNotRootOnly, whyNotRootsEntry, whyTreeNotRootOnly} from './trusted-path.js'
import {type WrittenItem, writeIfChanged} from './write-if-changed.js'

export const DEFAULT_GROUP = 'gpu-cosplay'
const ROOT = {uid: 0, gid: 0}

export type InstallRequest = {
  group?: string
  stateDir?: string
  nvidiaSmi?: string
  mpsControl?: string
  allowContainerSudo?: boolean
  /** fair share: a duration (`8h`), or 'none' to remove the setting; absent: kept */
  defaultTtl?: string
  maxTtl?: string
  idleReclaim?: string
  /** the box's quota per member: a count, or 'none'; per-group and per-user overrides are edited in the YAML */
  quotaSessions?: string
  quotaSlices?: string
  /** a member's container: a size (`64g`) or count, or 'none' for no limit; absent: kept (a box that never set one gets the defaults) */
  containerMemory?: string
  containerPids?: string
  shmSizeMax?: string
}

export type InstallItem = WrittenItem
export type InstallResult = {config: BoxConfig; items: InstallItem[]; notes: string[]}
export type UninstallResult = {removed: string[]; kept: string[]}

export async function installBox(request: InstallRequest, executor: Executor): Promise<InstallResult> {
  assertRoot('system install')
  const previous = readBoxConfig()
  const before = previous?.ok ? previous.config : null
  const config = resolveConfig(request, before)
  const nodePath = fs.realpathSync(process.execPath)
  const pkg = packageRoot()
  const engineJs = path.join(pkg, 'dist', 'engine.js')
  for (const [what, file] of [
    ['node', nodePath],
    ['the gpu-cosplay package', engineJs],
  ] as const) {
    if (!isPlainPath(file)) throw new InputError('BAD_PATH', `the path of ${what}, ${file}, has characters a sudoers rule cannot take`)
  }
  if (!fs.existsSync(SETSID)) {
    throw new StateError('SETSID_MISSING', `${SETSID} is missing: the engine runs in a session of its own`, {fix: ['install util-linux']})
  }
  const why = whyNotRootOnly(nodePath) ?? whyNotRootOnly(SETSID) ?? whyTreeNotRootOnly(pkg)
  if (why) {
    throw new StateError('NOT_ROOT_OWNED', `root would run code others can change: ${why}`, {
      exit: 4,
      fix: ['install gpu-cosplay for the whole box as root first: npm pack, then npm install -g ./gpu-cosplay-<version>.tgz', 'then run its system install'],
    })
  }
  const items: InstallItem[] = []
  const notes: string[] = []
  items.push(await ensureGroup(config.group, executor))
  items.push(...takeOverStateDir(config.stateDir, notes))
  ensureRootDir(BOX_CONFIG_DIR)
  items.push(writeIfChanged('configuration', BOX_CONFIG_FILE, renderConfig(config), 0o644))
  ensureRootDir(path.dirname(ENGINE_PATH))
  items.push(writeIfChanged('engine entry point', ENGINE_PATH, renderEntryPoint(nodePath, engineJs), 0o755))
  items.push(await writeSudoers(renderSudoers(config.group, config.engine), executor))
  const reaper = await installReaper(rootCommand(nodePath, pkg), executor)
  items.push(...reaper.items)
  if (reaper.kind === 'none')
    notes.push('neither systemd nor cron runs here: no reaper ends sessions at their TTL or idle (run gpu-cosplay system reap from a scheduler of yours)')
  if (config.allowContainerSudo) notes.push('up --sudo is allowed: a session with sudo has root over everything mounted into its container')
  return {config, items, notes}
}

export async function uninstallBox(executor: Executor = new LocalExecutor()): Promise<UninstallResult> {
  assertRoot('system uninstall')
  const read = readBoxConfig()
  const config = read?.ok ? read.config : null
  const stateDir = config?.stateDir ?? SHARED_STATE_DIR
  const up = fs.existsSync(stateDir) ? listSessions(stateDir, statePolicyOf(config !== null)) : []
  if (up.length > 0) {
    throw new StateError('SESSIONS_UP', `${up.length} session(s) are up on this box (${up.map((l) => l.session.name).join(', ')})`, {
      fix: ['end them first: sudo gpu-cosplay down --all', 'see them: gpu-cosplay ps'],
    })
  }
  const removed: string[] = []
  // the rule first: from here on nobody reaches the engine
  for (const file of [SUDOERS_PATH, ENGINE_PATH, BOX_CONFIG_FILE]) {
    if (fs.existsSync(file) || isLink(file)) {
      fs.rmSync(file)
      removed.push(file)
    }
  }
  removed.push(...(await removeReaper(executor)))
  for (const dir of [path.dirname(ENGINE_PATH), BOX_CONFIG_DIR]) {
    try {
      fs.rmdirSync(dir)
      removed.push(dir)
    } catch {
      // not empty, or gone: leave it
    }
  }
  return {removed, kept: [`group ${config?.group ?? DEFAULT_GROUP}`, `state directory ${stateDir}`]}
}

function resolveConfig(request: InstallRequest, before: BoxConfig | null): BoxConfig {
  const group = request.group ?? before?.group ?? DEFAULT_GROUP
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(group)) throw new InputError('BAD_GROUP', `--group ${group}: not a valid group name (e.g. gpu-cosplay)`)
  const stateDir = path.resolve(request.stateDir ?? before?.stateDir ?? SHARED_STATE_DIR)
  const nvidiaSmi = request.nvidiaSmi ?? before?.nvidiaSmi ?? findExecutable('nvidia-smi', process.env)
  if (!nvidiaSmi)
    throw new InputError('NO_NVIDIA_SMI', "no nvidia-smi on root's PATH", {
      fix: ['give its path: gpu-cosplay system install --nvidia-smi /usr/bin/nvidia-smi --yes'],
    })
  const mpsControl = request.mpsControl ?? before?.mpsControl ?? findExecutable('nvidia-cuda-mps-control', process.env)
  const config: BoxConfig = {
    version: 1,
    group,
    stateDir,
    nvidiaSmi: path.resolve(nvidiaSmi),
    mpsControl: mpsControl ? path.resolve(mpsControl) : null,
    engine: ENGINE_PATH,
    allowContainerSudo: request.allowContainerSudo ?? before?.allowContainerSudo ?? false,
    ...fairShareOf(request, before),
    ...containerLimitsFrom(request, before),
  }
  for (const [flag, file] of [
    ['--state-dir', config.stateDir],
    ['--nvidia-smi', config.nvidiaSmi],
    ['--mps-control', config.mpsControl],
  ] as const) {
    if (file !== null && !isPlainPath(file)) throw new InputError('BAD_PATH', `${flag} ${file}: use a plain absolute path (letters, digits, . _ - + @ /)`)
  }
  for (const [flag, file] of [
    ['--nvidia-smi', config.nvidiaSmi],
    ['--mps-control', config.mpsControl],
  ] as const) {
    if (file === null) continue
    const why = whyNotRootOnly(file)
    if (why)
      throw new StateError('NOT_ROOT_OWNED', `${flag} ${file}: root would run a program others can change: ${why}`, {
        exit: 4,
        fix: ['give a program that root alone can write'],
      })
    try {
      fs.accessSync(file, fs.constants.X_OK)
    } catch {
      throw new InputError('NOT_EXECUTABLE', `${flag} ${file} is not an executable file`)
    }
  }
  return config
}

/**
 * The fair-share settings: each flag given replaces its setting ('none' removes it), the others are kept, as are the
 * per-group and per-user quotas edited in the YAML. Absent settings are left out of the file (no limit).
 */
function fairShareOf(request: InstallRequest, before: BoxConfig | null): Partial<BoxConfig> {
  const pick = <T>(given: string | undefined, flag: string, was: T | null | undefined, parse: (text: string, flag: string) => T): T | null => {
    if (given === undefined) return was ?? null
    return given === 'none' ? null : parse(given, flag)
  }
  const duration = (text: string, flag: string) => {
    parseDuration(text, flag)
    return text
  }
  const count = (text: string, flag: string) => {
    if (!/^\d+$/.test(text)) throw new InputError('BAD_QUOTA', `${flag} ${text}: not a count (or none)`)
    return Number(text)
  }
  const defaultTtl = pick(request.defaultTtl, '--default-ttl', before?.defaultTtl, duration)
  const maxTtl = pick(request.maxTtl, '--max-ttl', before?.maxTtl, duration)
  const idleReclaim = pick(request.idleReclaim, '--idle-reclaim', before?.idleReclaim, duration)
  if (defaultTtl !== null && maxTtl !== null && parseDuration(defaultTtl, '--default-ttl') > parseDuration(maxTtl, '--max-ttl'))
    throw new InputError('BAD_TTL', `the default TTL (${defaultTtl}) is longer than the maximum (${maxTtl})`)
  const {groups, users} = before?.quotas ?? {}
  const quotas = {
    sessions: pick(request.quotaSessions, '--quota-sessions', before?.quotas?.sessions, count),
    slices: pick(request.quotaSlices, '--quota-slices', before?.quotas?.slices, count),
    ...(groups ? {groups} : {}),
    ...(users ? {users} : {}),
  }
  const hasQuotas = quotas.sessions !== null || quotas.slices !== null || groups !== undefined || users !== undefined
  return {
    ...(defaultTtl !== null ? {defaultTtl} : {}),
    ...(maxTtl !== null ? {maxTtl} : {}),
    ...(idleReclaim !== null ? {idleReclaim} : {}),
    ...(hasQuotas ? {quotas: Object.fromEntries(Object.entries(quotas).filter(([, v]) => v !== null))} : {}),
  }
}

/**
 * A member's container limits: each flag given replaces its setting ('none': no limit, kept as null), the others are
 * kept; a setting never given stays out of the file, and the engine applies CONTAINER_LIMIT_DEFAULTS.
 */
function containerLimitsFrom(request: InstallRequest, before: BoxConfig | null): Partial<BoxConfig> {
  const size = (text: string, flag: string) => {
    if ((byteSizeOf(text) ?? 0) <= 0) throw new InputError('BAD_SIZE', `${flag} ${text}: not a size (e.g. 64g, 512m), or none`)
    return text
  }
  const count = (text: string, flag: string) => {
    if (!/^[1-9]\d*$/.test(text)) throw new InputError('BAD_LIMIT', `${flag} ${text}: not a count (or none)`)
    return Number(text)
  }
  const pick = <T>(given: string | undefined, flag: string, was: T | null | undefined, parse: (text: string, flag: string) => T): {value: T | null} | null => {
    if (given === undefined) return was === undefined ? null : {value: was}
    return {value: given === 'none' ? null : parse(given, flag)}
  }
  const memory = pick(request.containerMemory, '--container-memory', before?.containerMemory, size)
  const pids = pick(request.containerPids, '--container-pids', before?.containerPids, count)
  const shm = pick(request.shmSizeMax, '--shm-size-max', before?.shmSizeMax, size)
  return {
    ...(memory ? {containerMemory: memory.value} : {}),
    ...(pids ? {containerPids: pids.value} : {}),
    ...(shm ? {shmSizeMax: shm.value} : {}),
  }
}

function renderConfig(config: BoxConfig): string {
  return `# gpu-cosplay on this box: written by \`gpu-cosplay system install\` (run it again to change a setting).
# Root's alone: the engine takes the state directory and the programs it runs from here and nowhere else.
# Fair share (optional; edit here or with system install --default-ttl/--max-ttl/--idle-reclaim/--quota-*):
#   defaultTtl: 8h        maxTtl: 24h        idleReclaim: 2h        (durations: 90s, 30m, 8h, 1h30m, 2d)
#   quotas: {sessions: 2, slices: 4, groups: {ml: {sessions: 4}}, users: {alice: {slices: 8}}}
#   (a user's own entry, else the most generous of their groups', else the box's; root has none)
# A member's container (optional; system install --container-memory/--container-pids/--shm-size-max; null: no limit):
#   containerMemory: ${CONTAINER_LIMIT_DEFAULTS.containerMemory}   containerPids: ${CONTAINER_LIMIT_DEFAULTS.containerPids}   shmSizeMax: ${CONTAINER_LIMIT_DEFAULTS.shmSizeMax}   (the defaults, when a setting is absent)
${dump(config, {lineWidth: -1})}`
}

async function ensureGroup(group: string, executor: Executor): Promise<InstallItem> {
  if (await groupExists(group, executor)) return {what: 'group', path: group, action: 'unchanged'}
  const made = await executor.run(['groupadd', '--system', group])
  if (made.exitCode !== 0) throw new StateError('GROUPADD_FAILED', `cannot create the group ${group}: ${made.stderr.trim().split('\n')[0]}`)
  return {what: 'group', path: group, action: 'created'}
}

/**
 * The state directory becomes root's alone (0755). One left by the earlier team set-up (1777, books 0666 that anyone
 * could have rewritten) is taken over only when no session is up in it, and nothing in it is trusted: its contents are
 * moved aside, whole, into a root-only folder (renames never follow a link), and the engine starts on empty books.
 */
function takeOverStateDir(dir: string, notes: string[]): InstallItem[] {
  const existed = fs.existsSync(dir) || isLink(dir)
  let action: InstallItem['action'] = existed ? 'unchanged' : 'created'
  if (existed) {
    const info = fs.lstatSync(dir)
    if (!info.isDirectory()) throw new StateError('STATE_DIR_DAMAGED', `${dir} is not a folder`, {fix: [`move it away: mv ${dir} ${dir}.bad`]})
    if (!isRootsStateDir(dir)) {
      // the team's folder: its books are its members' (read, never trusted, only to see whether any session is up)
      const up = listSessions(dir, SHARED_STATE_POLICY)
      if (up.length > 0) {
        throw new StateError('SESSIONS_UP', `${dir} is the team's shared state directory and ${up.length} session(s) are up in it`, {
          fix: ['end them first (gpu-cosplay ps; gpu-cosplay down --all, as each user or as root), then install'],
        })
      }
      const entries = fs.readdirSync(dir).filter((e) => !e.startsWith('legacy-'))
      if (entries.length > 0) {
        const aside = path.join(dir, `legacy-${new Date().toISOString().replace(/[:.]/g, '-')}`)
        fs.mkdirSync(aside, {mode: 0o700})
        for (const entry of entries) fs.renameSync(path.join(dir, entry), path.join(aside, entry))
        notes.push(`moved the earlier set-up's state (${entries.join(', ')}) to ${aside}, root's only: anyone could have written it`)
      }
      action = 'updated'
    }
  }
  ensureRootDir(dir)
  for (const sub of INSTALLED_STATE_FOLDERS) ensureRootDir(path.join(dir, sub))
  return [{what: 'state directory', path: dir, action}]
}

/** The engine's own layout: the folder, its books and claims, and users/ are root's and written by root alone. */
function isRootsStateDir(dir: string): boolean {
  const rootOnly = (file: string) => {
    const info = fs.lstatSync(file)
    return !info.isSymbolicLink() && whyNotRootsEntry(file, info) === null
  }
  if (!rootOnly(dir)) return false
  for (const sub of ENGINE_STATE_FOLDERS) {
    const subDir = path.join(dir, sub)
    if (!fs.existsSync(subDir) && !isLink(subDir)) continue
    if (!rootOnly(subDir) || !fs.lstatSync(subDir).isDirectory()) return false
    if (sub !== 'users' && !fs.readdirSync(subDir).every((e) => rootOnly(path.join(subDir, e)))) return false
  }
  return true
}

/** A folder of root's, 0755, made if missing; never a symlink (settled on the open folder). */
function ensureRootDir(dir: string): void {
  fs.mkdirSync(path.dirname(dir), {recursive: true, mode: 0o755})
  ensureDirMode(dir, 0o755, ROOT)
}

/** The rule is checked by visudo before it is put where sudo reads it: a broken sudoers file locks sudo for everyone. */
async function writeSudoers(text: string, executor: Executor): Promise<InstallItem> {
  const scratch = mkdtempSync(path.join(tmpdir(), 'gpu-cosplay-sudoers-'))
  try {
    const candidate = path.join(scratch, 'gpu-cosplay')
    writeFileSync(candidate, text, {mode: 0o440, flag: 'wx'})
    const checked = await executor.run(['visudo', '-cqf', candidate])
    if (checked.exitCode !== 0) {
      throw new StateError('SUDOERS_INVALID', `visudo refuses the rule: ${(checked.stderr || checked.stdout).trim().split('\n')[0]}`, {
        fix: ['is sudo installed? apt-get install sudo'],
      })
    }
  } finally {
    rmSync(scratch, {recursive: true, force: true})
  }
  if (!fs.lstatSync(path.dirname(SUDOERS_PATH)).isDirectory())
    throw new StateError('NO_SUDOERS_DIR', `${path.dirname(SUDOERS_PATH)} is not a folder`, {fix: ['apt-get install sudo']})
  return writeIfChanged('sudoers rule', SUDOERS_PATH, text, 0o440)
}

function assertRoot(command: string): void {
  if (process.getuid?.() !== 0)
    throw new StateError('ROOT_ONLY', `${command} changes the box for everyone: only root may run it`, {exit: 4, fix: [`sudo gpu-cosplay ${command} --yes`]})
}

/** The file's text; null when it is missing or not a plain file (a link in its place is replaced, never followed). */
function isLink(file: string): boolean {
  try {
    return fs.lstatSync(file).isSymbolicLink()
  } catch {
    return false
  }
}
