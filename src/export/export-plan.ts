import {resolveTarget} from '../catalog/resolve-target.js'
import type {Catalog, Target} from '../catalog/types.js'
import {InputError} from '../core/errors.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {profileChoices, versusPreferred} from '../plan/profile-choices.js'
import type {Plan, PlanHost} from '../plan/types.js'
import type {ExportFormat, ExportInput, MigStrategy} from './export-input.js'
import {type MigLayout, packMigLayout, type ProfileTrade} from './mig-layout.js'
import {chooseMixProfiles} from './pack-mix.js'
import {parseMix} from './parse-mix.js'
import {renderK8s} from './render-k8s.js'
import {renderMigParted} from './render-mig-parted.js'
import {renderSlurm} from './render-slurm.js'

export type ExportOptions = {
  readonly format: ExportFormat
  /** `3090x2,t4x3` (mig-parted only); the command's own target counts once unless the mix names it */
  readonly mix?: string
  readonly migStrategy?: MigStrategy
  readonly label?: string
  readonly image: string
  readonly leaseImage?: string
  readonly nodeName?: string
}

const RENDERERS: Record<ExportFormat, (input: ExportInput) => string> = {
  'mig-parted': renderMigParted,
  k8s: renderK8s,
  slurm: renderSlurm,
}

/**
 * Renders a plan for a cluster: mig-parted YAML, Kubernetes manifests or Slurm config. Pure: the catalog
 * resolves --mix targets, each planned on the same host with the same objective.
 */
export function exportPlan(catalog: Catalog, host: PlanHost, target: Target, plan: Plan, options: ExportOptions): string {
  return RENDERERS[options.format](exportInput(catalog, host, target, plan, options))
}

export function exportInput(catalog: Catalog, host: PlanHost, target: Target, plan: Plan, options: ExportOptions): ExportInput {
  if (options.mix !== undefined && options.format !== 'mig-parted') {
    throw new InputError('MIX_NEEDS_MIG_PARTED', `--mix lays out a whole GPU and works with -o mig-parted only, not -o ${options.format}`, {
      fix: ['export the layout with -o mig-parted --mix ..., then each target with -o ' + options.format],
    })
  }
  const mixed = options.mix === undefined ? [{asked: target.key, count: 'fill' as const, plan}] : mixPlans(catalog, host, target, plan, options.mix)
  const label = options.label ?? defaultLabel(mixed.map((m) => ({key: m.plan.target.key, count: options.mix === undefined ? null : m.count})))
  return {
    plan,
    target,
    hostModel: host.model,
    layout: layoutFor(options.format, host, mixed),
    layoutPlans: mixed.map((m) => m.plan),
    label: checkedLabel(label),
    image: options.image,
    leaseImage: options.leaseImage ?? options.image,
    migStrategy: options.migStrategy ?? 'mixed',
    nodeName: checkedNodeName(options.nodeName ?? 'gpu-node'),
  }
}

/** Slurm's NodeName hostlist (`gpu[01-04],gpu-x`): one word on one line of gres.conf, nothing a parser would read more into. */
function checkedNodeName(name: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._,[\]-]{0,254}$/.test(name)) return name
  throw new InputError('BAD_NODE_NAME', `--node ${JSON.stringify(name)} is not a Slurm NodeName (a hostname or hostlist such as gpu[01-04])`, {
    fix: ['letters, digits, ".", "_", "-", "," and [ranges] only'],
  })
}

type MixedPlan = {readonly asked: string; readonly count: number | 'fill'; readonly plan: Plan; readonly trade?: ProfileTrade}

/** The whole-GPU layout, or null where the GPU is not sliced (then only -o mig-parted refuses). */
function layoutFor(format: ExportFormat, host: PlanHost, mixed: readonly MixedPlan[]): MigLayout | null {
  const unsliced = mixed.find((m) => m.plan.mig === null)
  if (host.model.mig !== null && unsliced) {
    if (format !== 'mig-parted') return null
    const where = host.index === null ? host.name : `GPU ${host.index}`
    throw new InputError(
      'EXPORT_NEEDS_MIG',
      `the plan for ${unsliced.plan.target.name} uses no MIG slice on ${where} (${host.migUnavailableReason ?? 'whole GPU'})`,
      {
        fix: [`export against the model instead: --on ${host.model.key}`],
      },
    )
  }
  if (host.model.mig === null && format !== 'mig-parted') return null
  return packMigLayout(
    host.model,
    mixed.map((m) => ({
      targetKey: m.plan.target.key,
      asked: m.asked,
      profile: m.plan.mig?.profile ?? '',
      count: m.count,
      ...(m.trade ? {trade: m.trade} : {}),
    })),
  )
}

function mixPlans(catalog: Catalog, host: PlanHost, target: Target, plan: Plan, mix: string): MixedPlan[] {
  const items = parseMix(mix).map((item) => ({...item, target: resolveTarget(catalog, item.name)}))
  const keys = items.map((i) => i.target.key)
  const duplicate = keys.find((k, i) => keys.indexOf(k) !== i)
  if (duplicate) throw new InputError('BAD_MIX', `--mix names ${duplicate} twice`, {fix: ['give each target once with its count, e.g. 3090x2']})
  const own = items.some((i) => i.target.key === target.key) ? [] : [{name: target.key, count: 1, target}]
  const preferred = [...own, ...items].map((item) => ({
    asked: item.name,
    count: item.count,
    target: item.target,
    plan: item.target.key === target.key ? plan : planCosplay(item.target, host, plan.objective, {}, {basis: plan.basis ?? 'datasheet'}),
  }))
  // layoutFor refuses a plan without a slice, and packMigLayout a host without MIG
  if (host.model.mig === null || preferred.some((m) => m.plan.mig === null)) return preferred
  return packMix(host, preferred)
}

/** Gives each target of the mix the profile closest to its own plan's such that the whole mix fits on one GPU. */
function packMix(host: PlanHost, preferred: readonly (MixedPlan & {count: number; target: Target})[]): MixedPlan[] {
  const choices = preferred.map((m) => profileChoices(m.target, host, m.plan))
  const picks = chooseMixProfiles(
    host.model,
    preferred.map((m, i) => ({asked: m.asked, memoryGiB: Math.min(m.target.vramGB, m.plan.mig?.memoryGiB ?? 0), count: m.count, choices: choices[i]})),
  )
  return preferred.map((m, i) => {
    if (picks[i] === 0) return m
    const chosen = choices[i][picks[i]].plan
    return {...m, plan: chosen, trade: {preferred: m.plan.mig?.profile ?? '', versusPreferred: versusPreferred(chosen, m.plan)}}
  })
}

function defaultLabel(items: readonly {key: string; count: number | 'fill' | null}[]): string {
  const words = items.map((i) => `${i.key.replace(/_/g, '-')}${typeof i.count === 'number' ? `x${i.count}` : ''}`)
  return `gpu-cosplay-${words.join('-')}`
}

/** The label is also a Kubernetes label value (nvidia.com/mig.config): at most 63 characters of [A-Za-z0-9-_.]. */
function checkedLabel(label: string): string {
  if (/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(label)) return label
  throw new InputError('BAD_LABEL', `layout label "${label}" is not a Kubernetes label value (1-63 of A-Z a-z 0-9 - _ ., alphanumeric at both ends)`, {
    fix: ['name the layout with --label, e.g. --label cosplay-mix'],
  })
}
