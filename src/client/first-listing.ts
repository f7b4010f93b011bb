import {LocalExecutor} from '../core/local-executor.js'
import {SmiGpuControl} from '../host/gpu-control.js'
import type {ListGpus} from '../host/parse-list-gpus.js'
import {Smi, smiPathFrom} from '../host/smi.js'

/** the listing bin/run.js started, until `up` takes it */
let early: Promise<ListGpus> | null = null

/**
 * `nvidia-smi -L` started at once, through the same funnel (reads never need sudo). A failure is left to the
 * caller's own await, which reports it as any other nvidia-smi failure.
 */
function listNow(env: NodeJS.ProcessEnv): Promise<ListGpus> {
  const listing = new SmiGpuControl(new Smi(new LocalExecutor(), {path: smiPathFrom(env), sudo: false})).listGpus()
  listing.catch(() => undefined)
  return listing
}

/** bin/run.js: start `up`'s first look at the GPUs before oclif loads (~100 ms sooner). */
export function startEarlyListing(env: NodeJS.ProcessEnv = process.env): Promise<ListGpus> {
  early = listNow(env)
  return early
}

/** `up`: the listing bin/run.js started (taken once), or one started now. */
export function firstListing(env: NodeJS.ProcessEnv = process.env): Promise<ListGpus> {
  const listing = early ?? listNow(env)
  early = null
  return listing
}

/**
 * Whether bin/run.js may start the listing early: a local `up`, which will read the GPUs anyway. Help, and
 * `up` on another box, skip it; bad flags only cost a read.
 */
export function upReadsLocalGpu(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  // a member's up is read by the engine, which starts its own listing as soon as it has the request
  if (argv[0] !== 'up' || env.GPU_COSPLAY_HOST?.trim() || env.GPU_COSPLAY_ENGINE === 'member') return false
  return !argv.some((arg) => arg === '--host' || arg.startsWith('--host=') || arg === '-h' || arg === '--help')
}
