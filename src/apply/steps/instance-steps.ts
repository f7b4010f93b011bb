import {isSmiError} from '../../host/smi-error.js'
import {isLeaseSession, migSlotsOf, slotOfRank} from '../gpu-book.js'
import type {Json, StepContext, StepImpl} from './step.js'

/** IDs other sessions in this GPU's book own: never ours to destroy, even when they look new. */
function ownedByOthers(ctx: StepContext): {gis: Set<number>; cis: Set<string>} {
  const gis = new Set<number>()
  const cis = new Set<string>()
  for (const other of Object.values(ctx.book.sessions)) {
    if (other.name === ctx.session.name) continue
    for (const slot of migSlotsOf(other)) {
      if (slot.gpuInstanceId !== null) gis.add(slot.gpuInstanceId)
      if (slot.gpuInstanceId !== null && slot.computeInstanceId !== null) cis.add(`${slot.gpuInstanceId}/${slot.computeInstanceId}`)
    }
  }
  return {gis, cis}
}

function tolerateGone(error: unknown): void {
  if (!isSmiError(error, 'SMI_NOT_FOUND_INSTANCE')) throw error
}

/** `-cgi P -C`: the GPU instance and its default compute instance in one call (params.withComputeInstance says so in the journal). */
export const createGpuInstance: StepImpl = {
  kind: 'create-gi',
  describe: (params) =>
    `create GPU instance ${params.profile} (profile ${params.profileId})${params.withComputeInstance ? ' with its compute instance' : ''}${params.rank ? ` for rank ${params.rank}` : ''}`,

  async readPrior(ctx) {
    return {gpuInstanceIds: ctx.live.gpuInstances.map((gi) => gi.id)}
  },

  async apply(ctx, params) {
    const index = ctx.live.index
    const created = await ctx.gpu.createGpuInstanceWithComputeInstance(index, params.profileId as number)
    // Old drivers do not print the new CI's ID: in a GPU instance made a moment ago, it is the only one.
    const computeInstanceId = created.computeInstanceId ?? (await ctx.gpu.computeInstances(index, created.gpuInstanceId))[0]?.id ?? null
    // the slot of the rank this step makes (params.rank, up --count N; absent: the session's one)
    const slot = isLeaseSession(ctx.session) ? null : slotOfRank(ctx.session, (params.rank as number | undefined) ?? 0)
    if (slot) Object.assign(slot, {gpuInstanceId: created.gpuInstanceId, computeInstanceId})
    return {gpuInstanceId: created.gpuInstanceId, computeInstanceId}
  },

  async undo(ctx, entry) {
    const index = ctx.live.index
    const id = (entry.result?.gpuInstanceId as number | undefined) ?? (await findNewGpuInstance(ctx, entry.params, entry.prior))
    if (id === null) return
    // A GPU instance this session made holds only compute instances this session made (-C's, or after a crash
    // between the call and its record, whatever it left): a GPU instance is destroyed only once it holds none.
    const recorded = entry.result?.computeInstanceId as number | null | undefined
    const cis = recorded != null ? [recorded] : (await ctx.gpu.computeInstances(index, id)).map((ci) => ci.id)
    for (const ci of cis) await ctx.gpu.destroyComputeInstance(index, id, ci).catch(tolerateGone)
    // Destroyed by its own ID; "not found" means it is gone already, which is what undo wants.
    await ctx.gpu.destroyGpuInstance(index, id).catch(tolerateGone)
  },
}

/** After a crash between `-cgi` and its record: the GI of our profile that was not there before and no one else owns. */
async function findNewGpuInstance(ctx: StepContext, params: Json, prior: Json): Promise<number | null> {
  const index = ctx.live.index
  const before = new Set(prior.gpuInstanceIds as number[])
  const others = ownedByOthers(ctx).gis
  // up --count N: the instances this session's other ranks recorded are theirs (priors are all read before the first)
  const ranks = new Set(migSlotsOf(ctx.session).map((slot) => slot.gpuInstanceId))
  const fresh = (await ctx.gpu.gpuInstances(index)).filter(
    (gi) => gi.profileId === params.profileId && !before.has(gi.id) && !others.has(gi.id) && !ranks.has(gi.id),
  )
  if (fresh.length === 1) return fresh[0].id
  if (fresh.length > 1) ctx.notes.push(`GPU ${index}: ${fresh.length} unrecorded GPU instances of profile ${params.profileId}; none was destroyed`)
  return null
}
