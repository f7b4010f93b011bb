import {StateError} from '../../core/errors.js'
import {isSmiError} from '../../host/smi-error.js'
import type {HostGpu} from '../../host/types.js'
import type {GpuControl, MigModeChange} from '../../host/gpu-control.js'
import type {GpuBook, Lease, Setting, SettingValue} from '../gpu-book.js'
import type {StepKind} from '../../core/names.js'
import type {StepImpl} from './step.js'

/**
 * GPU-wide settings act on the whole physical GPU, so sessions share them as leases: the first session
 * records the value in force (read from the GPU, never the default) and sets its own; later sessions
 * join; the last one to leave puts the recorded value back.
 */
type SettingAccess = {
  readonly kind: StepKind
  readonly setting: Setting
  readonly label: string
  /** the value in force now; undefined when this GPU does not report or support it */
  read(live: HostGpu): SettingValue | undefined
  write(gpu: GpuControl, index: number, value: SettingValue): Promise<void>
}

/** What restoring a setting needs: the GPU, its index, and where to say what was left alone. */
type RestoreContext = {readonly gpu: GpuControl; readonly live: HostGpu; readonly notes: string[]}

const PERSISTENCE: SettingAccess = {
  kind: 'set-persistence',
  setting: 'persistence',
  label: 'persistence mode',
  read: (live) => live.persistenceMode ?? undefined,
  write: (gpu, index, value) => gpu.setPersistence(index, value === true),
}

const MIG_MODE: SettingAccess = {
  kind: 'enable-mig',
  setting: 'mig-mode',
  label: 'MIG mode',
  read: (live) => (live.migMode ? live.migMode.current === 'enabled' : undefined),
  write: async (gpu, index, value) => {
    const change = await gpu.setMigMode(index, value === true)
    if (value === true) await undoIfPending(gpu, index, change)
  },
}

const CLOCKS: SettingAccess = {
  kind: 'lock-clocks',
  setting: 'clocks',
  label: 'clock lock',
  // nvidia-smi cannot show an existing -lgc lock; we assume none and restore with -rgc (docs/shared-box.md says so).
  read: () => null,
  write: (gpu, index, value) => (value === null ? gpu.resetClocks(index) : gpu.lockClocks(index, value as number)),
}

const POWER_LIMIT: SettingAccess = {
  kind: 'set-power-limit',
  setting: 'power-limit',
  label: 'power limit (W)',
  // The requested limit is what -pl set and what a restore must put back; the enforced one can be lower.
  read: (live) => live.power.requestedW ?? live.power.currentW ?? undefined,
  write: (gpu, index, value) => gpu.setPowerLimit(index, value as number),
}

const ACCESS: Readonly<Record<Setting, SettingAccess>> = {
  persistence: PERSISTENCE,
  'mig-mode': MIG_MODE,
  clocks: CLOCKS,
  'power-limit': POWER_LIMIT,
}

function leaseStep(access: SettingAccess): StepImpl {
  return {
    kind: access.kind,
    describe: (params) => `${access.label} -> ${show(params.value as SettingValue)}`,

    async readPrior(ctx, params) {
      if (ctx.book.leases[access.setting]) return {mode: 'join'}
      const current = access.read(ctx.live)
      if (current === undefined) return null
      return {mode: current === params.value ? 'adopt' : 'change', original: current}
    },

    async apply(ctx, params, prior) {
      const lease = ctx.book.leases[access.setting]
      if (prior.mode === 'join' && lease) {
        if (!lease.holders.includes(ctx.session.name)) lease.holders.push(ctx.session.name)
        return {}
      }
      if (prior.mode === 'change') await access.write(ctx.gpu, ctx.live.index, params.value as SettingValue)
      ctx.book.leases[access.setting] = {original: prior.original as SettingValue, value: params.value as SettingValue, holders: [ctx.session.name]}
      return {}
    },

    async undo(ctx, entry) {
      const lease = ctx.book.leases[access.setting]
      if (entry.state === 'intended') {
        // Died (or failed) between intent and record: the write may or may not have happened, and no
        // one else can hold a lease that was never recorded. Writing the old value back is safe either way.
        if (entry.prior.mode === 'change' && !lease) await restore(ctx, access, entry.prior.original as SettingValue)
        if (lease) lease.holders = lease.holders.filter((h) => h !== ctx.session.name)
        return
      }
      if (!lease) return
      lease.holders = lease.holders.filter((h) => h !== ctx.session.name)
      if (lease.holders.length > 0) return
      if (lease.value !== lease.original) await restore(ctx, access, lease.original)
      delete ctx.book.leases[access.setting]
    },
  }
}

async function restore(ctx: RestoreContext, access: SettingAccess, original: SettingValue): Promise<void> {
  const index = ctx.live.index
  if (access.setting === 'mig-mode' && original === false) {
    // Turning MIG off would fail (and must not be forced) while anyone's instances exist.
    const instances = await ctx.gpu.gpuInstances(index)
    if (instances.length > 0) {
      ctx.notes.push(`MIG mode left on for GPU ${index}: ${instances.length} GPU instance(s) not made by this session remain`)
      return
    }
  }
  await access.write(ctx.gpu, index, original)
}

/**
 * `-mig 1` can be accepted yet stay "pending" until a GPU reset: turn it back off and fail. Its own output
 * says which; only output we do not recognise costs a read of the GPU.
 */
async function undoIfPending(gpu: GpuControl, index: number, change: MigModeChange): Promise<void> {
  if (change === 'enabled') return
  if (change === 'unknown' && (await gpu.probeGpu(index)).migMode?.current === 'enabled') return
  await gpu.setMigMode(index, false).catch((error: unknown) => {
    if (!isSmiError(error)) throw error
  })
  throw new StateError('MIG_PENDING_RESET', `GPU ${index}: MIG mode was accepted but stays pending until the GPU is reset`, {
    fix: ['an administrator must reset the idle GPU (nvidia-smi -i N -r) or reboot', 'or use another GPU: --host-gpu N'],
  })
}

function show(value: SettingValue): string {
  return value === null ? 'unlocked' : String(value)
}

/** the journal step that changes a setting */
export function stepKindOf(setting: Setting): StepKind {
  return ACCESS[setting].kind
}

export const setPersistence = leaseStep(PERSISTENCE)
export const enableMig = leaseStep(MIG_MODE)
export const lockClocks = leaseStep(CLOCKS)
export const setPowerLimit = leaseStep(POWER_LIMIT)

/** Leases nobody holds any more (their sessions were lost to a reboot): put back what was found, drop them. */
export async function settleUnheldLeases(ctx: RestoreContext & {readonly book: GpuBook}): Promise<void> {
  for (const [setting, lease] of Object.entries(ctx.book.leases) as [Setting, Lease | undefined][]) {
    if (!lease || lease.holders.length > 0) continue
    if (lease.value !== lease.original) await restore(ctx, ACCESS[setting], lease.original)
    delete ctx.book.leases[setting]
  }
}
