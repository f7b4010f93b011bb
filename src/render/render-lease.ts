import type {HoldOutcome, LeaseState, ReleaseOutcome} from '../client/gpu-lease.js'

/** A GPU's leases after `lease hold|release`, a line each. */
export function renderLeases(leases: readonly LeaseState[]): string[] {
  return leases.map((lease) => leaseLine(lease.setting, lease))
}

/** How a GPU-wide lease reads in `status` and in `lease hold|release`: value, holders, and what a restore puts back. */
export function leaseLine(setting: string, lease: {readonly value: unknown; readonly original: unknown; readonly holders: readonly string[]}): string {
  return `  ${setting}: ${shown(lease.value)} held by ${lease.holders.join(', ') || 'nobody'} (restores ${shown(lease.original)})`
}

/** a clock lock of null is "unlocked" */
function shown(value: unknown): string {
  return value === null ? 'unlocked' : String(value)
}

/** The text view of `lease hold`: what the holder holds, then the GPU's leases. */
export function renderHold(r: HoldOutcome): string {
  const what = r.settings.map((s) => `${s.setting} ${s.value} (${s.action})`).join(', ')
  const head = r.changed ? `${r.holder} holds ${what} on GPU ${r.hostGpu.index}` : `${r.holder} holds ${what} on GPU ${r.hostGpu.index}; nothing changed`
  return [head, ...renderLeases(r.leases), ...r.notes.map((n) => `  note: ${n}`)].join('\n')
}

/** The text view of `lease release`: what was released or restored, then the GPU's leases. */
export function renderRelease(r: ReleaseOutcome): string {
  const head = !r.released
    ? `${r.holder} held nothing on GPU ${r.hostGpu.index}`
    : `${r.holder} released GPU ${r.hostGpu.index}${r.restored.length > 0 ? `; restored ${r.restored.join(', ')} as found before` : ''}`
  return [head, ...renderLeases(r.leases), ...r.notes.map((n) => `  note: ${n}`)].join('\n')
}
