import type {HostModel, Target} from '../catalog/types.js'
import type {Plan} from '../plan/types.js'
import type {MigLayout} from './mig-layout.js'
import {physicalMiBOf as slicePhysicalMiB} from '../plan/physical-memory.js'

export const EXPORT_FORMATS = ['mig-parted', 'k8s', 'slurm'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

/** How the NVIDIA device plugin exposes MIG devices: `nvidia.com/mig-<profile>` (mixed) or `nvidia.com/gpu` (single). */
export const MIG_STRATEGIES = ['mixed', 'single'] as const
export type MigStrategy = (typeof MIG_STRATEGIES)[number]

/** Everything a renderer needs; renderers read only the Plan fields they name, so extra fields are harmless. */
export type ExportInput = {
  /** the plan of the command's own target */
  readonly plan: Plan
  readonly target: Target
  readonly hostModel: HostModel
  /** null on a host model without MIG */
  readonly layout: MigLayout | null
  /** one plan per layout entry, same order (the first is `plan` itself) */
  readonly layoutPlans: readonly Plan[]
  /** the mig-parted config name, also the node label value nvidia.com/mig.config */
  readonly label: string
  readonly image: string
  /** the lease DaemonSet's image: needs the gpu-cosplay CLI (node >= 20) and nvidia-smi */
  readonly leaseImage: string
  readonly migStrategy: MigStrategy
  /** Slurm NodeName (a hostlist expression) */
  readonly nodeName: string
}

/** The GPU index the lease acts on: the planned GPU, or 0 when planning against a model. */
export function hostGpuOf(input: ExportInput): number {
  return input.plan.host.index ?? 0
}

/** The costume's view of the slice: MIG memory, or the whole GPU's. */
export function physicalMiBOf(input: ExportInput): number {
  return slicePhysicalMiB(input.plan, Math.round(input.hostModel.memoryGiB * 1024))
}

export function headerLines(input: ExportInput): string[] {
  const {plan} = input
  const slice = plan.mig ? `MIG ${plan.mig.profile} (${plan.mig.smCount} SMs, ${plan.mig.memoryGiB} GiB)` : `the whole GPU (${plan.smCount} SMs)`
  return [`gpu-cosplay: ${plan.target.name} on ${input.hostModel.name} as ${slice}, matching ${plan.objective}`]
}

export function comment(lines: readonly string[]): string {
  return lines.map((line) => (line === '' ? '#' : `# ${line}`)).join('\n')
}
