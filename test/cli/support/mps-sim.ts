/** The MPS control stand-in (test/sim/nvidia-cuda-mps-control) as CLI tests use it: its environment, and what it was asked. */
import {existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {type Env, MPS_SIM_BIN, type Sim} from './run-cli.js'

export type MpsRecord = {argv: string[]; command: string | null; cudaVisibleDevices: string | null; pipeDirectory: string}

/** The CLI's environment with the stand-in as the MPS control binary, recording every call next to the simulator. */
export function mpsEnv(sim: Sim, extra: Env = {}): Env {
  return sim.env({GPU_COSPLAY_MPS_CONTROL: MPS_SIM_BIN, GPU_COSPLAY_SIM_MPS_LOG: join(sim.dir, 'mps.log'), ...extra})
}

/** Every call the stand-in recorded, in order. */
export function mpsLog(sim: Sim): MpsRecord[] {
  const file = join(sim.dir, 'mps.log')
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as MpsRecord)
    : []
}
