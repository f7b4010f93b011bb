/** `system status` (and doctor's shared-box line): what `system install` put on this box, and whether it still holds. */
import fs from 'node:fs'

import {BOX_CONFIG_FILE, type BoxConfig} from '../core/box-config.js'
import {noneMissing, type ReadinessCheck} from '../core/check.js'
import {readBoxConfig} from '../core/read-box-config.js'
import type {Executor} from '../core/executor.js'
import {readTextIfExists} from '../core/json-file.js'
import {renderSudoers, SUDOERS_PATH} from './entry-point.js'
import {groupId} from '../core/user-groups.js'
import {installedReaper, REAPER_PERIOD_S, rootCommand} from './reaper-timer.js'
import {whyNotRootOnly, whyTreeNotRootOnly} from './trusted-path.js'

export type BoxStatus = {
  /** a configuration file exists (it may still be broken: see healthy) */
  installed: boolean
  /** installed and every check ok */
  healthy: boolean
  config: BoxConfig | null
  /** whether the user asking is in the box's group (null for root or when not installed) */
  member: boolean | null
  checks: ReadinessCheck[]
}

const REINSTALL = 'sudo gpu-cosplay system install --yes'

export async function boxStatus(executor: Executor): Promise<BoxStatus> {
  const read = readBoxConfig()
  if (read === null) return {installed: false, healthy: false, config: null, member: null, checks: []}
  if (!read.ok)
    return {
      installed: true,
      healthy: false,
      config: null,
      member: null,
      checks: [{name: 'configuration', status: 'missing', detail: read.why, fix: [REINSTALL]}],
    }
  const config = read.config
  const isRoot = process.getuid?.() === 0
  const checks: ReadinessCheck[] = [{name: 'configuration', status: 'ok', detail: BOX_CONFIG_FILE, fix: []}]
  const gid = groupId(config.group)
  checks.push(
    gid === null
      ? {name: 'group', status: 'missing', detail: `no group ${config.group}`, fix: [REINSTALL]}
      : {name: 'group', status: 'ok', detail: `${config.group} (gid ${gid})`, fix: []},
  )
  checks.push(rootOnly('engine entry point', config.engine))
  checks.push(await sudoersCheck(config, executor, isRoot))
  checks.push(stateDirCheck(config.stateDir))
  checks.push(rootOnly('nvidia-smi', config.nvidiaSmi))
  if (config.mpsControl !== null) checks.push(rootOnly('MPS control', config.mpsControl))
  checks.push(packageCheck(config.engine))
  checks.push(reaperCheck(config.engine))
  const member = isRoot || gid === null ? null : (process.getgroups?.() ?? []).includes(gid)
  if (member === false)
    checks.push({
      name: 'membership',
      status: 'warn',
      detail: `you are not in ${config.group}: commands that change the GPU are refused`,
      fix: [`ask an admin: sudo usermod -aG ${config.group} $USER`],
    })
  return {installed: true, healthy: noneMissing(checks), config, member, checks}
}

/** What ends sessions at their TTL when nobody runs a command (reaper-timer.ts). */
function reaperCheck(engine: string): ReadinessCheck {
  const entry = /--wait (\/\S+) (\/\S+)\/dist\/engine\.js "\$@"/.exec(readTextIfExists(engine) ?? '')
  const command = entry ? rootCommand(entry[1], entry[2]) : `gpu-cosplay`
  const found = installedReaper(command)
  if (found.kind === 'none')
    return {
      name: 'reaper',
      status: 'warn',
      detail: 'no reaper is installed: sessions outlive their TTL until a command runs (neither systemd nor cron was found at install)',
      fix: [REINSTALL, `or run ${command} system reap as root from a scheduler of yours`],
    }
  return {name: 'reaper', status: 'ok', detail: `${found.kind}: ${found.path} (every ${REAPER_PERIOD_S[found.kind]} s)`, fix: []}
}

function rootOnly(name: string, file: string): ReadinessCheck {
  const why = whyNotRootOnly(file)
  return why ? {name, status: 'missing', detail: why, fix: [REINSTALL]} : {name, status: 'ok', detail: file, fix: []}
}

async function sudoersCheck(config: BoxConfig, executor: Executor, isRoot: boolean): Promise<ReadinessCheck> {
  const name = 'sudoers rule'
  if (!isRoot) {
    const exists = fs.existsSync(SUDOERS_PATH)
    return {
      name,
      status: exists ? 'ok' : 'missing',
      detail: exists ? `${SUDOERS_PATH} (its content is root's to read)` : `no ${SUDOERS_PATH}`,
      fix: exists ? [] : [REINSTALL],
    }
  }
  const owned = rootOnly(name, SUDOERS_PATH)
  if (owned.status !== 'ok') return owned
  if (readTextIfExists(SUDOERS_PATH) !== renderSudoers(config.group, config.engine))
    return {name, status: 'missing', detail: `${SUDOERS_PATH} is not the rule gpu-cosplay wrote`, fix: [REINSTALL]}
  const checked = await executor.run(['visudo', '-cqf', SUDOERS_PATH]).catch(() => null)
  if (checked === null || checked.exitCode !== 0) return {name, status: 'missing', detail: `visudo refuses ${SUDOERS_PATH}`, fix: [REINSTALL]}
  return {name, status: 'ok', detail: `${SUDOERS_PATH}: %${config.group} may run ${config.engine}`, fix: []}
}

function stateDirCheck(dir: string): ReadinessCheck {
  const name = 'state directory'
  const why = whyNotRootOnly(dir)
  if (why) return {name, status: 'missing', detail: why, fix: [REINSTALL]}
  const info = fs.lstatSync(dir)
  if ((info.mode & 0o1000) !== 0) return {name, status: 'missing', detail: `${dir} is still the shared sticky folder`, fix: [REINSTALL]}
  return {name, status: 'ok', detail: `${dir} (root's alone)`, fix: []}
}

/** The package the entry point runs, read back from it: root's alone, all of it. */
function packageCheck(engine: string): ReadinessCheck {
  const name = 'package'
  const script = readTextIfExists(engine) ?? ''
  const pkg = /\s(\/\S+)\/dist\/engine\.js "\$@"/.exec(script)?.[1]
  if (!pkg) return {name, status: 'missing', detail: `${engine} runs no gpu-cosplay engine (an earlier install's runs the whole CLI as root)`, fix: [REINSTALL]}
  const why = whyTreeNotRootOnly(pkg)
  return why ? {name, status: 'missing', detail: why, fix: [REINSTALL]} : {name, status: 'ok', detail: pkg, fix: []}
}
