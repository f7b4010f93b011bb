import {dump} from 'js-yaml'

import {describeSettings, gpuWideSettings} from './gpu-wide-lease.js'
import {comment, type ExportInput} from './export-input.js'
import type {MigLayout} from './mig-layout.js'
import type {HostModel} from '../catalog/types.js'
import {weighedErrors} from '../plan/placement.js'

/** mig-parted's `version: v1` config with one named layout; key order is fixed, so output is byte-stable. */
export function migPartedConfig(layout: MigLayout, model: HostModel, label: string): Record<string, unknown> {
  const entry = {
    ...(model.pciDeviceIds ? {'device-filter': [...model.pciDeviceIds]} : {}),
    devices: 'all',
    'mig-enabled': true,
    'mig-devices': {...layout.migDevices},
  }
  return {version: 'v1', 'mig-configs': {[label]: [entry]}}
}

/** flowLevel: nesting depth from which collections are written inline (-1: never). */
export function dumpYaml(value: unknown, flowLevel = -1): string {
  return dump(value, {lineWidth: -1, noRefs: true, sortKeys: false, flowLevel})
}

/** Like mig-parted's own files: device-filter and mig-devices inline, one entry per GPU group. */
export function dumpMigParted(config: Record<string, unknown>): string {
  return dumpYaml(config, 4)
}

export function renderMigParted(input: ExportInput): string {
  const {layout, hostModel, label} = input
  if (layout === null) throw new Error('renderMigParted needs a MIG layout')
  const lines = [
    `gpu-cosplay: a whole-GPU MIG layout for ${hostModel.name}`,
    ...layout.entries.flatMap((e, i) => [
      `  ${e.asked} x${e.count}: ${e.profile} (${layoutTargetName(input, i)})`,
      ...(e.trade ? [`    to fit the mix: ${e.profile} instead of ${e.trade.preferred} (${weighedErrors({weighed: e.trade.versusPreferred})})`] : []),
    ]),
    '',
    'WARNING: nvidia-mig-parted destroys every MIG instance on a GPU before it applies a layout. Never point',
    'it at a GPU that `gpu-cosplay up` uses: sessions there would lose their slices mid-run.',
    hostModel.pciDeviceIds
      ? `device-filter: only GPUs with PCI device id ${hostModel.pciDeviceIds.join(' or ')} (${hostModel.name}).`
      : `No PCI device id is known for ${hostModel.name}: this layout applies to every GPU.`,
    '',
    `Apply:  nvidia-mig-parted apply -f THIS_FILE -c ${label}`,
    `Check:  nvidia-mig-parted assert -f THIS_FILE -c ${label}`,
    ...gpuWideLines(input),
  ]
  return `${comment(lines)}\n${dumpMigParted(migPartedConfig(layout, hostModel, label))}`
}

function layoutTargetName(input: ExportInput, index: number): string {
  return input.layoutPlans[index]?.target.name ?? input.layout!.entries[index].targetKey
}

/** MIG layouts carry no clocks or power: say what the plans would still want GPU-wide. */
function gpuWideLines(input: ExportInput): string[] {
  const wants = input.layoutPlans.flatMap((plan) => {
    const settings = gpuWideSettings(plan, input.hostModel)
    return settings ? [`  ${plan.target.name}: ${describeSettings(settings)}`] : []
  })
  if (wants.length === 0) return []
  return ['', 'MIG sets no clock or power limit. These plans also want GPU-wide settings, which bind every slice:', ...wants]
}
