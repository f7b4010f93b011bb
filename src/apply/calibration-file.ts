import fs from 'node:fs'
import path from 'node:path'

import {StateError} from '../core/errors.js'
import {readJsonFile, writeJsonAtomic} from '../core/json-file.js'
import {settleDir} from '../core/settle-dir.js'
import type {StatePolicy} from '../core/state-policy.js'
import {calibrationDir, calibrationFile, calibrationPrefix} from '../core/state-layout.js'
import {type Calibration, calibrationSchema} from '../host/calibration.js'

/**
 * `calibrate`'s state file: one per GPU model and driver, <state>/calibrations/<model>-<driver>.json (a driver update
 * changes cuBLAS and clocks, so it voids the figures).
 */

/**
 * The calibration for this GPU model under this driver, or null when there is none. A damaged file, or one
 * taken under another driver, is refused: its figures would silently be wrong.
 */
export function readCalibration(stateDir: string, model: string, driver: string, trust: StatePolicy): {file: string; calibration: Calibration} | null {
  const file = calibrationFile(stateDir, model, driver)
  const read = readJsonFile(file, calibrationSchema, {owner: trust.trustedOwner})
  if (read === null) {
    const other = otherDriverFiles(stateDir, model, driver)[0]
    if (other) throw stale(other, `was taken under another driver than this host's ${driver}`)
    return null
  }
  if (!read.ok) throw invalid(file, read.why, read.cause)
  const parsed = read
  if (parsed.data.driver !== driver) throw stale(file, `records driver ${parsed.data.driver}, this host runs ${driver}`)
  if (parsed.data.gpu.model !== model) throw stale(file, `is for ${parsed.data.gpu.model}, not ${model}`)
  return {file, calibration: parsed.data}
}

/** Writes atomically and removes this model's calibrations from other drivers, which no longer apply. */
export function writeCalibration(stateDir: string, calibration: Calibration, policy: StatePolicy): string {
  const dir = calibrationDir(stateDir)
  fs.mkdirSync(stateDir, {recursive: true})
  // shared like gpus/ (any user may recalibrate after a driver update), or root's in the engine; never a symlink
  settleDir(dir, {create: true}, ({info, created, chmod, chown}) => {
    if (policy.engine && info.uid !== 0) chown(0, 0)
    if (created || (policy.engine && (info.mode & 0o7777) !== policy.sharedFolderMode)) chmod(policy.sharedFolderMode)
  })
  const file = calibrationFile(stateDir, calibration.gpu.model, calibration.driver)
  writeJsonAtomic(file, calibrationSchema.parse(calibration))
  for (const old of otherDriverFiles(stateDir, calibration.gpu.model, calibration.driver)) fs.rmSync(old, {force: true})
  return file
}

function otherDriverFiles(stateDir: string, model: string, driver: string): string[] {
  const dir = calibrationDir(stateDir)
  const mine = path.basename(calibrationFile(stateDir, model, driver))
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return []
  }
  // model keys are lower_snake_case and drivers start with a digit, so "<model>-<digit>" cannot match a longer key
  const prefix = calibrationPrefix(model)
  return names
    .filter((n) => n.startsWith(prefix) && /^\d/.test(n.slice(prefix.length)) && n.endsWith('.json') && n !== mine)
    .sort()
    .map((n) => path.join(dir, n))
}

function invalid(file: string, why: string, cause: unknown): StateError {
  return new StateError('CALIBRATION_INVALID', `calibration file ${file} is unusable: ${why}`, {
    cause,
    fix: ['measure again: gpu-cosplay calibrate --host-gpu N', `or remove it: rm ${file}`],
  })
}

function stale(file: string, why: string): StateError {
  return new StateError('CALIBRATION_STALE', `calibration file ${file} ${why}`, {
    fix: ['measure again under this driver: gpu-cosplay calibrate --host-gpu N', `or remove it: rm ${file}`],
  })
}
