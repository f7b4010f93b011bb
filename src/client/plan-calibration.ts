import {homedir} from 'node:os'

import {findStateDir} from '../apply/state-dir.js'
import {readCalibration} from '../apply/calibration-file.js'
import type {StatePolicy} from '../core/state-policy.js'
import type {HostProbe} from '../host/types.js'
import type {CalibrationLookup} from '../plan/achievable-for.js'

/**
 * The calibration for the GPU a plan was made for: none against a catalog model (--on), else the file for
 * this model and the probed driver. A damaged or stale file is an error (plan must not quietly use it).
 */
export function planCalibration(model: string, probe: HostProbe | null, trust: StatePolicy): CalibrationLookup {
  if (probe === null) return {status: 'model'}
  const driver = probe.driverVersion
  if (driver === null) return {status: 'missing', model, driver: 'unknown'}
  // plan changes nothing and creates nothing; without a state directory there is no calibration
  const stateDir = findStateDir(process.env, homedir())
  if (stateDir === null) return {status: 'missing', model, driver}
  const found = readCalibration(stateDir.dir, model, driver, trust)
  return found ? {status: 'found', ...found} : {status: 'missing', model, driver}
}
