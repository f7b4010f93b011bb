import {LocalExecutor} from '../../core/local-executor.js'
import {SmiGpuControl} from '../../host/gpu-control.js'
import type {ListGpus} from '../../host/parse-list-gpus.js'
import {Smi, smiPathFrom} from '../../host/smi.js'

/**
 * `nvidia-smi -L` started at once, through the same funnel (reads never need sudo). A failure is left to the
 * caller's own await, which reports it as any other nvidia-smi failure.
 */
export function startFirstListing(env: NodeJS.ProcessEnv = process.env): Promise<ListGpus> {
  const listing = new SmiGpuControl(new Smi(new LocalExecutor(), {path: smiPathFrom(env), sudo: false})).listGpus()
  listing.catch(() => undefined)
  return listing
}
