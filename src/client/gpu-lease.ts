/**
 * `lease hold` and `lease release`: a named holder's share of a GPU's clock lock and power limit, without a slice or
 * a container (what a Kubernetes DaemonSet or a Slurm prolog calls). Root's alone on a shared box; the command checks.
 */
import type {HoldOutcome, ReleaseOutcome} from '../apply/lease-hold.js'
import type {CallContext} from '../core/call-context.js'

export type {HoldOutcome, LeaseState, ReleaseOutcome} from '../apply/lease-hold.js'

export type LeaseHoldRequest = {
  readonly hostGpu: number
  readonly holder: string
  readonly clockMHz: number | null
  readonly powerLimitW: number | null
}

/**
 * Takes the holder's lease on that GPU (journaled; Ctrl-C finishes the step, then undoes). The holder and values are
 * checked before the GPU is contacted, the values against the GPU's ranges once it is read.
 */
export async function holdGpuLease(call: CallContext, request: LeaseHoldRequest, say: (line: string) => void): Promise<HoldOutcome> {
  const [{applyContext, cancelOnSignals}, {holdLease, assertHoldInput}, {currentCatalog}] = await Promise.all([
    import('./apply-context.js'),
    import('../apply/lease-hold.js'),
    import('./context.js'),
  ])
  assertHoldInput(request.holder, {clockMHz: request.clockMHz, powerLimitW: request.powerLimitW})
  const catalog = await currentCatalog()
  const ctx = await applyContext(call, {mutates: true})
  const cancel = cancelOnSignals(say)
  try {
    return await holdLease(
      {...request, owner: ctx.owner, isRoot: ctx.isRoot, pid: process.pid, hostname: ctx.hostname},
      {...ctx.deps, catalog, cancel, onProgress: say},
    )
  } finally {
    cancel.dispose()
  }
}

/** Drops the holder's lease on that GPU; the last holder of a setting restores the value found before the first. */
export async function releaseGpuLease(call: CallContext, request: {readonly hostGpu: number; readonly holder: string}): Promise<ReleaseOutcome> {
  const [{applyContext}, {releaseLease, assertHolder}] = await Promise.all([import('./apply-context.js'), import('../apply/lease-hold.js')])
  assertHolder(request.holder)
  const ctx = await applyContext(call, {mutates: true})
  return releaseLease({hostGpu: request.hostGpu, holder: request.holder}, {uid: ctx.owner.uid, isRoot: ctx.isRoot}, ctx.deps)
}
