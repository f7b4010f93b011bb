import {homedir} from 'node:os'

import {hostStatus, type HostStatus} from '../../apply/host-status.js'
import {resolveStateDir} from '../../apply/state-dir.js'
import {isCosplayError} from '../../core/errors.js'
import {probeHost} from '../../host/probe.js'
import {localSmi} from './context.js'

/** Books plus one probe. Without nvidia-smi the records are still shown. */
export async function readHostStatus(): Promise<HostStatus> {
  const stateDir = resolveStateDir(process.env, homedir())
  let probe = null
  try {
    probe = await probeHost(localSmi())
  } catch (error) {
    if (!isCosplayError(error)) throw error
  }
  return hostStatus(probe, stateDir.dir, stateDir.isShared)
}
