import {homedir} from 'node:os'

import {resolveHostModel, resolveTarget} from '../catalog/resolve-target.js'
import type {Catalog, Target} from '../catalog/types.js'
import {HostError} from '../core/errors.js'
import type {CallContext} from '../core/call-context.js'
import type {StatePolicy} from '../core/state-policy.js'
import type {ExportOptions} from '../export/export-plan.js'
import {pickGpu} from '../host/pick-gpu.js'
import {probeHost} from '../host/probe.js'
import type {Smi} from '../host/smi.js'
import type {HostProbe} from '../host/types.js'
import {type Achievable, achievableFor, type CalibrationLookup} from '../plan/achievable-for.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {hostModelFor, planHostFromModel, planHostFromProbe} from '../plan/plan-host.js'
import type {RankHost} from '../plan/plan-ranks.js'
import type {Objective, Plan, PlanHost, PlanOptions} from '../plan/types.js'
import {currentCatalog, localSmi} from './context.js'

export type PlanRequest = PlanOptions & {
  readonly on?: string
  readonly hostGpu?: number
  readonly objective: Objective
  readonly strict: boolean
  /** override what this host has (exports plan for a cluster, which runs no MPS daemon of ours) */
  readonly mpsAvailable?: boolean
  /** `--count N`: N devices of the target in one session (plan/plan-ranks.ts); absent or 1: one */
  readonly count?: number
}

/** `achievable`: the plan's figures as this host really delivers them (calibrate), next to the peaks */
export type PlanResult = Plan & {achievable: Achievable}

/**
 * `plan GPU`: the plan with what this host achieves (its calibration), and with `exportAs` the plan rendered for a
 * cluster (mig-parted, Kubernetes or Slurm).
 */
export async function planTarget(
  call: CallContext,
  gpu: string,
  request: PlanRequest,
  exportAs?: ExportOptions,
): Promise<{plan: PlanResult; exported: string | null}> {
  const catalog = await currentCatalog()
  const target = resolveTarget(catalog, gpu)
  // A cluster runs no per-session MPS daemon of ours: exports shape with MIG and GPU-wide leases.
  const {
    plan: cosplay,
    host,
    calibration,
  } = await planFor(catalog, target, exportAs ? {...request, mpsAvailable: false} : request, () => localSmi(), call.policy)
  const plan: PlanResult = {...cosplay, achievable: achievableFor(cosplay, calibration, target.reference)}
  if (!exportAs) return {plan, exported: null}
  // js-yaml and the renderers load only for -o: plain `plan` stays at oclif's start-up cost.
  const {exportPlan} = await import('../export/export-plan.js')
  return {plan, exported: exportPlan(catalog, host, target, plan, exportAs)}
}

/**
 * `--on MODEL` plans against an idle catalog model and needs no GPU. Otherwise the plan is what the next
 * `up` with the same arguments would do: the probed GPU (default 0), the GPU-wide values other sessions
 * hold (read from the state directory without a lock, creating nothing), and the same refusals.
 */
export async function planFor(
  catalog: Catalog,
  target: Target,
  request: PlanRequest,
  smi: () => Smi,
  /** whose files in the state directory are read (the call context's) */
  trust: StatePolicy,
): Promise<{plan: Plan; host: PlanHost; probe: HostProbe | null; calibration: CalibrationLookup}> {
  const count = request.count ?? 1
  if (request.on !== undefined) {
    // A model stands for a host with a current driver, which ships the MPS control binary.
    const host = planHostFromModel(resolveHostModel(catalog, request.on), {mpsAvailable: request.mpsAvailable ?? true})
    const plan =
      count > 1
        ? (await import('../plan/plan-ranks.js')).planRanks(target, [{host, held: {holders: []}}], request.objective, count, request)
        : planCosplay(target, host, request.objective, {}, request)
    return {plan, host, probe: null, calibration: {status: 'model'}}
  }
  const probe = await probeOrExplain(smi())
  // --count N without --host-gpu may use every GPU of the box; otherwise the one asked (default 0)
  const indexes = count > 1 && request.hostGpu === undefined ? probe.gpus.map((g) => g.index) : [pickGpu(probe, request.hostGpu ?? 0).index]
  const hosts = await Promise.all(indexes.map((index) => probedHost(catalog, probe, index, request, trust)))
  const first = hosts[0]
  if (count > 1) {
    const {planRanks} = await import('../plan/plan-ranks.js')
    const plan = planRanks(target, hosts, request.objective, count, request)
    const placed = hosts.find((h) => h.host.index === plan.host.index) ?? first
    return {plan, host: placed.host, probe, calibration: placed.calibration}
  }
  const {planOnGpu} = await import('../plan/plan-on-gpu.js')
  return {plan: planOnGpu(target, first.host, request.objective, first.held, request), host: first.host, probe, calibration: first.calibration}
}

/** A probed GPU as the planner sees it: its calibration, and the GPU-wide values other sessions hold on it. */
async function probedHost(
  catalog: Catalog,
  probe: HostProbe,
  index: number,
  request: PlanRequest,
  trust: StatePolicy,
): Promise<RankHost & {calibration: CalibrationLookup}> {
  const gpu = pickGpu(probe, index)
  const model = hostModelFor(catalog, gpu)
  // the probed GPU's calibration moves the host's measured rates (reading it loads zod: only here, never for --on)
  const [{findMpsControl}, {planCalibration}] = await Promise.all([import('../host/mps.js'), import('./plan-calibration.js')])
  const calibration = planCalibration(model.key, probe, trust)
  const host = planHostFromProbe(gpu, model, {
    mpsAvailable: request.mpsAvailable ?? findMpsControl(process.env) !== null,
    calibration:
      calibration.status === 'found' ? {fractions: calibration.calibration.fractions, file: calibration.file, driver: calibration.calibration.driver} : null,
  })
  const [{findStateDir}, {heldSettings, readBook}, {bookPath}] = await Promise.all([
    import('../apply/state-dir.js'),
    import('../apply/gpu-book.js'),
    import('../core/state-layout.js'),
  ])
  const stateDir = findStateDir(process.env, homedir())
  const book = stateDir ? readBook(bookPath(stateDir.dir, gpu.uuid), trust) : null
  return {host, held: book ? heldSettings(book) : {holders: []}, calibration}
}

async function probeOrExplain(smi: Smi): Promise<HostProbe> {
  try {
    return await probeHost(smi)
  } catch (error) {
    if (error instanceof HostError && error.code === 'SMI_NOT_FOUND') {
      throw new HostError('SMI_NOT_FOUND', `${error.message}`, {
        cause: error,
        fix: ['plan against a built-in host model instead: gpu-cosplay plan 3090 --on h200', 'or set GPU_COSPLAY_NVIDIA_SMI to the nvidia-smi path'],
      })
    }
    throw error
  }
}
