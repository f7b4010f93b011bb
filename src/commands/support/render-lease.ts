import type {LeaseState} from '../../apply/lease-hold.js'

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
