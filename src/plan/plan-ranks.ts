import type {Target} from '../catalog/types.js'
import {CosplayError, StateError} from '../core/errors.js'
import {type HeldSettings, planOnGpu, type PlanOnGpuOptions} from './plan-on-gpu.js'
import {planScore} from './plan-score.js'
import type {Objective, Plan, PlanHost, PlanRanks} from './types.js'

/** One GPU `--count N` may use: as the planner sees it, and the settings others hold on it. */
export type RankHost = {readonly host: PlanHost; readonly held: HeldSettings}

/** /dev/shm per rank: NCCL's shared-memory transport keeps its buffers there (64 MiB, Docker's default, is too small). */
export const SHM_MIB_PER_RANK = 1024

/** shape: what a rank gets, said to the user; kind: what makes two GPUs' ranks alike (the same shape on the same model) */
type Candidate = {
  readonly host: PlanHost
  readonly plan: Plan
  readonly capacity: number
  readonly score: number
  readonly shape: string
  readonly kind: string
}

/**
 * `plan/up GPU --count N`: N devices shaped like the target, each planned as a single session would be (the same
 * physics, the same refusals), placed where the same shape fits N times: on one GPU when it can (its slices share
 * the one link there is), else over the fewest GPUs, those with the most room first. The shape is the best-scoring
 * one that fits N times in all: a GPU's preferred profile first, then the other profiles that hold the target's VRAM
 * (closest first), so `--count 4` may take a smaller slice than `--count 1` where only that fits four times, and says
 * so. Refused with one line, before anything changes, where N of no shape fit. Pure.
 */
export function planRanks(target: Target, hosts: readonly RankHost[], objective: Objective, count: number, options: PlanOnGpuOptions): Plan {
  return placeRanks(target, hosts, objective, count, options).plan
}

/** Where planRanks puts the ranks, GPU by GPU in rank order, each with its own plan of the shape (its clock, its index). */
export type RankPlacement = {readonly plan: Plan; readonly gpus: readonly {readonly host: PlanHost; readonly ranks: number; readonly plan: Plan}[]}

/** planRanks, and each GPU's own plan of the chosen shape: what `up` applies on each GPU of a spread session. */
export function placeRanks(
  target: Target,
  hosts: readonly RankHost[],
  objective: Objective,
  count: number,
  options: PlanOnGpuOptions,
  /**
   * GPUs the caller could not even model, and why, for the refusal's reasons: lasting where they never take a rank
   * (a model the catalog lacks), not where a later look may find them usable (a read that failed, a damaged journal)
   */
  refused: readonly {readonly reason: string; readonly lasting: boolean}[] = [],
): RankPlacement {
  if (!Number.isInteger(count) || count < 2) throw new Error(`planRanks: count ${count} (one device is planCosplay's)`)
  const candidates: Candidate[] = []
  const refusals: string[] = refused.map((r) => r.reason)
  // GPUs alike in all but their index (an idle 8-GPU box) have the same shapes: planned once (each plan is a search,
  // and `up` plans every GPU under their locks)
  const alike = new Map<string, Candidate[]>()
  for (const {host, held} of hosts) {
    const key = likenessOf(host, held)
    const known = alike.get(key)
    if (known) {
      candidates.push(...known.map((c) => onHost(c, host)))
      continue
    }
    try {
      const shapes = shapesOn(target, host, held, objective, options)
      alike.set(key, shapes)
      candidates.push(...shapes)
    } catch (error) {
      if (!(error instanceof CosplayError)) throw error
      refusals.push(`${where(host)}: ${error.message}`)
    }
  }
  const preferred = bestOf(candidates)
  // the ranks of one session are alike: a profile named the same on another model (A100's and H100's 3g.40gb) is another shape
  const byShape = new Map<string, Candidate[]>()
  for (const c of candidates) byShape.set(c.kind, [...(byShape.get(c.kind) ?? []), c])
  const shapes = [...byShape.values()].sort((a, b) => bestOf(a)!.score - bestOf(b)!.score)
  for (const group of shapes) {
    // the most room first, then the GPUs' order: the fewest GPUs, and the same ones for the same state
    const room = [...group].filter((c) => c.capacity > 0).sort((a, b) => b.capacity - a.capacity || (a.host.index ?? 0) - (b.host.index ?? 0))
    const placed: {candidate: Candidate; ranks: number}[] = []
    let left = count
    for (const c of room) {
      if (left === 0) break
      const ranks = Math.min(left, c.capacity)
      placed.push({candidate: c, ranks})
      left -= ranks
    }
    if (left > 0) continue
    const first = placed[0].candidate
    const say = (c: Candidate) => (first.host.model.key === preferred!.host.model.key ? c.shape : shapeOn(c))
    const notes = first.kind === preferred?.kind ? [] : [`${count} of the preferred shape (${say(preferred!)}) do not fit; each rank takes ${say(first)}`]
    const ranks: PlanRanks = {
      count,
      gpus: placed.map((p) => ({index: p.candidate.host.index, ranks: p.ranks})),
      link: linkOf(first.plan, placed.length > 1, target),
      shmMiB: SHM_MIB_PER_RANK * count,
    }
    const withRanks = (plan: Plan) => ({...plan, ranks, warnings: [...plan.warnings, ...notes]})
    return {plan: withRanks(first.plan), gpus: placed.map((p) => ({host: p.candidate.host, ranks: p.ranks, plan: withRanks(p.candidate.plan)}))}
  }
  throw doNotFit(
    target,
    count,
    candidates,
    refusals,
    hosts,
    refused.some((r) => !r.lasting),
  )
}

/** Every shape a GPU could give one rank: its own plan, then (MIG) each other free profile that holds the VRAM. */
function shapesOn(target: Target, host: PlanHost, held: HeldSettings, objective: Objective, options: PlanOnGpuOptions): Candidate[] {
  const own = planOnGpu(target, host, objective, held, options)
  const out = [candidate(host, own)]
  if (own.mig === null || host.profiles === null) return out
  for (const profile of host.profiles) {
    if (profile.name === own.mig.profile || profile.free === 0 || profile.memoryGiB < target.vramGB) continue
    out.push(candidate(host, planOnGpu(target, {...host, profiles: [profile]}, objective, held, options)))
  }
  return out
}

/** What a GPU's plans depend on, all but which GPU it is. */
function likenessOf(host: PlanHost, held: HeldSettings): string {
  const {index: _index, name: _name, ...rest} = host
  return JSON.stringify([rest, held])
}

/** A candidate planned on a GPU alike, as this GPU's own. */
function onHost(c: Candidate, host: PlanHost): Candidate {
  return {...c, host, plan: {...c.plan, host: {...c.plan.host, name: host.name, index: host.index}}}
}

function candidate(host: PlanHost, plan: Plan): Candidate {
  const shape = shapeOf(plan)
  return {host, plan, capacity: capacityOf(host, plan), score: planScore(plan), shape, kind: `${host.model.key} ${shape}`}
}

/** The shape with its GPU model: where the preferred shape is on another model than the one taken. */
function shapeOn(c: Candidate): string {
  return `${c.shape} of ${c.host.model.name}`
}

/** How many ranks of this plan's shape the GPU takes now. */
function capacityOf(host: PlanHost, plan: Plan): number {
  // a MIG profile's free count is the driver's (or the model's idle) answer for that profile, placements included
  if (plan.mig) return host.profiles?.find((p) => p.name === plan.mig!.profile)?.free ?? 0
  // MPS shares of a whole GPU: its threads and its memory, each share with its own pinned limit
  if (plan.mps) {
    return Math.min(Math.floor(100 / plan.mps.activeThreadPercentage), Math.floor((host.model.memoryGiB * 1024) / plan.mps.pinnedMemLimitMiB))
  }
  return 1
}

function shapeOf(plan: Plan): string {
  if (plan.mig) return plan.mps ? `${plan.mig.profile} (MPS ${plan.mps.activeThreadPercentage}%)` : plan.mig.profile
  return plan.mps ? `an MPS share of ${plan.mps.activeThreadPercentage}%` : 'a whole GPU'
}

function bestOf(candidates: readonly Candidate[]): Candidate | undefined {
  return [...candidates].sort((a, b) => a.score - b.score)[0]
}

function where(host: PlanHost): string {
  return host.index === null ? host.name : `GPU ${host.index}`
}

/** What joins the ranks here, said plainly: never the target's PCIe or NVLink. */
function linkOf(plan: Plan, acrossGpus: boolean, target: Target): PlanRanks['link'] {
  const across = acrossGpus ? ' The ranks span GPUs, and MIG instances and MPS clients have no P2P path between GPUs either.' : ''
  const speed = `Collectives run here at shared-memory speed, not at the speed of the PCIe or NVLink between real ${target.name}s: time them on the real machine.`
  if (plan.mig) {
    return {
      kind: 'mig-instances',
      acrossGpus,
      note: `The ranks are MIG instances: no NVLink or P2P between them. NCCL 2.32 and later carries their traffic through host shared memory (/dev/shm); older NCCL refuses several instances ("Duplicate GPU detected") and gloo (sockets) is used.${across} ${speed}`,
    }
  }
  if (plan.mps) {
    return {
      kind: 'mps-clients',
      acrossGpus,
      note: `The ranks are MPS clients of one GPU, each with its own daemon and limits. NCCL 2.30 and later runs several ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1, which the costume sets); older NCCL refuses them ("Duplicate GPU detected") and gloo (sockets) is used.${across} ${speed}`,
    }
  }
  return {
    kind: 'whole-gpus',
    acrossGpus,
    note: `Each rank holds a whole GPU: the ranks talk over this host's own links between its GPUs (NVLink or PCIe), not those between real ${target.name}s.`,
  }
}

/** How many ranks of this plan's shape the GPU would take idle (every slice free). */
function idleCapacityOf(host: PlanHost, plan: Plan): number {
  if (plan.mig) return host.model.mig?.profiles.find((p) => p.name === plan.mig!.profile)?.maxInstances ?? 0
  return capacityOf(host, plan)
}

/**
 * RANKS_DO_NOT_FIT where the GPUs could take N once others free their slices (`up --wait` waits for that);
 * TOO_MANY_RANKS where they never could.
 */
function doNotFit(
  target: Target,
  count: number,
  candidates: readonly Candidate[],
  refusals: readonly string[],
  hosts: readonly RankHost[],
  /** a GPU was not looked at this time: what it holds is unknown, so N may fit later */
  unseen: boolean,
): StateError {
  const best = bestOf(candidates)
  const fits = candidates.filter((c) => c.kind === best?.kind).reduce((sum, c) => sum + c.capacity, 0)
  const model = hosts.length === 1 && hosts[0].host.index === null ? hosts[0].host : null
  const perGpu = best && model ? best.capacity : 0
  const room =
    best === undefined
      ? refusals.join('; ')
      : model && perGpu > 0
        ? `${perGpu} of ${best.shape} fit on one ${model.name}; ${count} need ${Math.ceil(count / perGpu)} (plan --on plans one GPU)`
        : `${fits} of ${best.shape} fit now${refusals.length > 0 ? ` (${refusals.join('; ')})` : ''}`
  // whether N of some shape would fit once every GPU of its model is idle again (a GPU full now plans no candidate)
  const kinds = new Map(candidates.map((c) => [c.kind, c]))
  const idleFits = (c: Candidate) => hosts.filter((h) => h.host.model.key === c.host.model.key).reduce((sum, h) => sum + idleCapacityOf(h.host, c.plan), 0)
  // no GPU could plan (busy, MIG pending a reset): the reasons say what to wait for
  const ever = unseen || candidates.length === 0 || [...kinds.values()].some((c) => idleFits(c) >= count)
  return new StateError(ever ? 'RANKS_DO_NOT_FIT' : 'TOO_MANY_RANKS', `${count} x ${target.name} do not fit: ${room}`, {
    fix: [`ask for fewer: --count ${Math.max(1, fits)}`, 'see who holds the GPUs: gpu-cosplay status'],
  })
}
