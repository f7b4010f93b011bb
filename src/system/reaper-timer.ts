/**
 * The reaper's timer: what ends sessions at their TTL, or idle, when nobody runs a command. `system install`
 * puts up a systemd timer when systemd runs (/run/systemd/system), else an /etc/cron.d entry when cron is there, else
 * nothing (then `system status` and doctor say no reaper is installed). Either runs root's gpu-cosplay, the box's
 * package with root's node (`NODE PACKAGE/bin/run.js system reap`), as root at a shell does: the engine serves members'
 * requests only.
 */
import fs from 'node:fs'
import path from 'node:path'

import type {Executor} from '../core/executor.js'
import {StateError} from '../core/errors.js'
import {type WrittenItem, writeIfChanged} from './write-if-changed.js'

export type ReaperPaths = {readonly systemdRun: string; readonly systemdDir: string; readonly cronDir: string}
export const REAPER_PATHS: ReaperPaths = {systemdRun: '/run/systemd/system', systemdDir: '/etc/systemd/system', cronDir: '/etc/cron.d'}
export const REAPER_UNIT = 'gpu-cosplay-reap'
/** systemd's timer runs a pass every 30 s; cron's every minute: the warning lead and the end land within that. */
export const REAPER_PERIOD_S = {systemd: 30, cron: 60} as const

export type ReaperKind = 'systemd' | 'cron' | 'none'
export type ReaperItem = WrittenItem

/** root's own gpu-cosplay: the box's node on the box's package (both root's alone: system install checks) */
export function rootCommand(nodePath: string, pkg: string): string {
  return `${nodePath} ${path.join(pkg, 'bin', 'run.js')}`
}

export function renderService(command: string): string {
  return `# gpu-cosplay: ends sessions whose time is up (written by \`gpu-cosplay system install\`)
[Unit]
Description=gpu-cosplay reaper: end sessions past their TTL or idle

[Service]
Type=oneshot
ExecStart=${command} system reap
`
}

export function renderTimer(): string {
  return `# gpu-cosplay: runs ${REAPER_UNIT}.service every ${REAPER_PERIOD_S.systemd} s (written by \`gpu-cosplay system install\`)
[Unit]
Description=gpu-cosplay reaper timer

[Timer]
OnBootSec=1min
OnUnitActiveSec=${REAPER_PERIOD_S.systemd}s
AccuracySec=1s

[Install]
WantedBy=timers.target
`
}

export function renderCron(command: string): string {
  return `# gpu-cosplay: ends sessions whose time is up, every minute (written by \`gpu-cosplay system install\`)
* * * * * root ${command} system reap >/dev/null 2>&1
`
}

export function reaperKind(paths: ReaperPaths = REAPER_PATHS): ReaperKind {
  if (isDir(paths.systemdRun)) return 'systemd'
  if (isDir(paths.cronDir)) return 'cron'
  return 'none'
}

/** Writes (or keeps) the timer's files and, under systemd, enables the timer. */
export async function installReaper(command: string, executor: Executor, paths: ReaperPaths = REAPER_PATHS): Promise<{kind: ReaperKind; items: ReaperItem[]}> {
  const kind = reaperKind(paths)
  if (kind === 'none') return {kind, items: []}
  if (kind === 'cron')
    return {kind, items: [writeIfChanged('reaper (cron)', path.join(paths.cronDir, REAPER_UNIT), renderCron(command), 0o644, reaperOwners())]}
  const items = [
    writeIfChanged('reaper service', path.join(paths.systemdDir, `${REAPER_UNIT}.service`), renderService(command), 0o644, reaperOwners()),
    writeIfChanged('reaper timer', path.join(paths.systemdDir, `${REAPER_UNIT}.timer`), renderTimer(), 0o644, reaperOwners()),
  ]
  for (const argv of [
    ['systemctl', 'daemon-reload'],
    ['systemctl', 'enable', '--now', `${REAPER_UNIT}.timer`],
  ]) {
    const done = await executor.run(argv)
    if (done.exitCode !== 0) throw new StateError('REAPER_NOT_STARTED', `${argv.join(' ')} failed: ${done.stderr.trim().split('\n')[0] ?? ''}`)
  }
  return {kind, items}
}

/** Which reaper is installed: its files are there, and say what this installation would write. */
export function installedReaper(command: string, paths: ReaperPaths = REAPER_PATHS): {kind: ReaperKind; path: string | null} {
  const unit = path.join(paths.systemdDir, `${REAPER_UNIT}.timer`)
  if (readIfFile(unit) === renderTimer() && readIfFile(path.join(paths.systemdDir, `${REAPER_UNIT}.service`)) === renderService(command))
    return {kind: 'systemd', path: unit}
  const cron = path.join(paths.cronDir, REAPER_UNIT)
  if (readIfFile(cron) === renderCron(command)) return {kind: 'cron', path: cron}
  return {kind: 'none', path: null}
}

/** system uninstall: the timer stops and its files go. */
export async function removeReaper(executor: Executor, paths: ReaperPaths = REAPER_PATHS): Promise<string[]> {
  const removed: string[] = []
  const timer = path.join(paths.systemdDir, `${REAPER_UNIT}.timer`)
  if (fs.existsSync(timer)) await executor.run(['systemctl', 'disable', '--now', `${REAPER_UNIT}.timer`]).catch(() => undefined)
  for (const file of [timer, path.join(paths.systemdDir, `${REAPER_UNIT}.service`), path.join(paths.cronDir, REAPER_UNIT)]) {
    if (fs.existsSync(file)) {
      fs.rmSync(file)
      removed.push(file)
    }
  }
  return removed
}

/** root's (or, in tests, this user's): a file someone else put there is not our reaper */
function reaperOwners(): number[] {
  return [0, process.getuid?.() ?? 0]
}

function readIfFile(file: string): string | null {
  try {
    const info = fs.lstatSync(file)
    // root's (or, in tests, this user's): a file someone else put there is not our reaper
    return info.isFile() && (info.uid === 0 || info.uid === process.getuid?.()) ? fs.readFileSync(file, 'utf8') : null
  } catch {
    return null
  }
}

function isDir(dir: string): boolean {
  return fs.statSync(dir, {throwIfNoEntry: false})?.isDirectory() === true
}
