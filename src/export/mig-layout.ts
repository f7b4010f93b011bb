import type {HostModel, MigProfileSpec} from '../catalog/types.js'
import {InputError} from '../core/errors.js'
import type {Plan} from '../plan/types.js'

/** One line of a whole-GPU layout: how many instances of one target's slice. */
export type LayoutEntry = {
  readonly targetKey: string
  /** what the user typed, for messages (`3090`, `t4`) */
  readonly asked: string
  readonly profile: string
  readonly count: number
  /** set where a mix gave this target another profile than its own plan's */
  readonly trade?: ProfileTrade
}

/** What a target gave up to fit a mix: its own plan's profile, and the chosen plan's weighed axes measured against that plan's. */
export type ProfileTrade = {readonly preferred: string; readonly versusPreferred: Plan['weighed']}

/** A whole-GPU MIG layout: every instance mig-parted (or the GPU operator) creates on each matching GPU. */
export type MigLayout = {
  readonly hostModel: string
  readonly entries: readonly LayoutEntry[]
  /** profile name -> instances, in the catalog's profile order (mig-parted's `mig-devices`) */
  readonly migDevices: Readonly<Record<string, number>>
}

export type LayoutRequest = {
  readonly targetKey: string
  readonly asked: string
  readonly profile: string
  /** 'fill': as many as fit (a single target's layout); a number: exactly that many or refuse */
  readonly count: number | 'fill'
  readonly trade?: ProfileTrade
}

type Placed = {readonly memory: readonly [number, number]; readonly compute: readonly [number, number]}

/**
 * Packs the requested slices onto one GPU of the host model, or refuses with the first instance that does
 * not fit. Placement follows the MIG user guide's tables for A100/H100/H200/A30: an instance of a profile
 * with S memory slices and G compute slices starts at a multiple of S, and occupies memory slices
 * [start, start+S) and compute slices [start, start+G), so 2g/4g/1g cannot take the last memory slice
 * (it has no compute slice of its own) while 1g.35gb and 3g can. Counts are also capped by maxInstances.
 */
export function packMigLayout(model: HostModel, requests: readonly LayoutRequest[]): MigLayout {
  const mig = model.mig
  if (mig === null) {
    throw new InputError('EXPORT_NEEDS_MIG', `${model.name} has no MIG, so there is no MIG layout to export`, {
      fix: ['plan against a MIG-capable host model, e.g. --on h200', 'or use -o k8s / -o slurm, which request a whole GPU there'],
    })
  }
  const instances: MigProfileSpec[] = []
  const entries: LayoutEntry[] = []
  for (const request of requests) {
    const spec = migProfileSpec(model, request.profile)
    if (request.count === 'fill') {
      let count = 0
      while (count < spec.maxInstances && fits(model, [...instances, spec])) {
        instances.push(spec)
        count++
      }
      entries.push({targetKey: request.targetKey, asked: request.asked, profile: spec.name, count})
      continue
    }
    for (let i = 1; i <= request.count; i++) {
      if (!fits(model, [...instances, spec])) throw doesNotFit(model, request, spec, i, entries)
      instances.push(spec)
    }
    entries.push({...request, profile: spec.name, count: request.count})
  }

  const migDevices: Record<string, number> = {}
  for (const profile of mig.profiles) {
    const count = instances.filter((p) => p.name === profile.name).length
    if (count > 0) migDevices[profile.name] = count
  }
  return {hostModel: model.key, entries, migDevices}
}

/** The model's MIG profile of this name. */
export function migProfileSpec(model: HostModel, name: string): MigProfileSpec {
  const spec = model.mig?.profiles.find((p) => p.name === name)
  if (!spec) throw new InputError('EXPORT_UNKNOWN_PROFILE', `${model.name} has no MIG profile ${name}`)
  return spec
}

function doesNotFit(model: HostModel, request: LayoutRequest, spec: MigProfileSpec, nth: number, before: readonly LayoutEntry[]): InputError {
  const placed = [...before.map((e) => `${e.asked} x${e.count} (${e.profile})`), ...(nth > 1 ? [`${request.asked} x${nth - 1} (${spec.name})`] : [])]
  const beside = placed.length > 0 ? ` beside ${placed.join(', ')}` : ''
  return new InputError('MIX_DOES_NOT_FIT', `${request.asked} #${nth} (${spec.name}) does not fit on one ${model.name}${beside}`, {
    fix: ['ask for fewer instances in --mix', 'or spread the mix over two GPUs: export one layout per GPU'],
  })
}

/** Whether these instances can all be placed at once (backtracking over the legal start slices). */
export function fits(model: HostModel, instances: readonly MigProfileSpec[]): boolean {
  const mig = model.mig
  if (mig === null) return false
  for (const spec of new Set(instances)) {
    if (instances.filter((p) => p === spec).length > spec.maxInstances) return false
  }
  // Largest first: the search then fails fast instead of shuffling 1g slices around.
  const order = [...instances].sort((a, b) => b.memorySlices - a.memorySlices || computeSlicesOf(b) - computeSlicesOf(a))
  const place = (i: number, placed: readonly Placed[]): boolean => {
    if (i === order.length) return true
    for (const option of placementsOf(order[i], mig.memorySlices, mig.computeSlices)) {
      if (placed.every((p) => !overlaps(p.memory, option.memory) && !overlaps(p.compute, option.compute)) && place(i + 1, [...placed, option])) return true
    }
    return false
  }
  return place(0, [])
}

function placementsOf(spec: MigProfileSpec, memorySlices: number, computeSlices: number): Placed[] {
  const compute = computeSlicesOf(spec)
  const options: Placed[] = []
  for (let start = 0; start + spec.memorySlices <= memorySlices; start += spec.memorySlices) {
    if (start + compute <= computeSlices) options.push({memory: [start, start + spec.memorySlices], compute: [start, start + compute]})
  }
  return options
}

/** "3g.71gb" -> 3 */
function computeSlicesOf(spec: MigProfileSpec): number {
  return Number.parseInt(spec.name, 10)
}

function overlaps(a: readonly [number, number], b: readonly [number, number]): boolean {
  return a[0] < b[1] && b[0] < a[1]
}
