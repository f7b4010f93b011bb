import {type LeaveOneOutRow, leaveOneOut} from '../catalog/achieved-model.js'
import {REFERENCE_GEMM_METHOD} from '../catalog/measure-methods.js'
import type {Catalog, HostModel, Target} from '../catalog/types.js'
import {round} from '../core/units.js'
import type {PerfMeasurement} from '../host/perf-measurement.js'
import {hostRatesOf, measuredAt} from '../plan/measured-throughput.js'
import {type PerfReport, perfReport} from '../plan/perf-verdict.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {planHostFromModel} from '../plan/plan-host.js'
import type {Objective, Plan} from '../plan/types.js'

/**
 * The fidelity tables (`npm run fidelity`, docs/fidelity.md): what each measured card measures against its datasheet,
 * what a cosplay of it on a host expects (from the plan's own SMs, clock and the host's rates), the estimate's
 * leave-one-out, memory as the card has it, and what sessions measured where a GPU was at hand (fixtures).
 */
export type MatchRow = {
  readonly slice: string
  readonly smCount: number
  readonly clockMHz: number
  readonly expected: number
  readonly card: number
  readonly errorPct: number
  /** half of what one TPC (2 SMs) more or less changes at this SM count and clock: the step whole TPCs allow */
  readonly halfTpc: number
  /** within 3%, or within half a TPC where whole TPCs cannot get closer */
  readonly within: boolean
  /** the whole host measures less than 97% of the card: nothing closer is possible here */
  readonly beyondHost: boolean
}

export type CardRow = {
  readonly key: string
  readonly name: string
  readonly datasheet: {readonly fp32Tflops: number; readonly tensorTflops: number | null; readonly bandwidthGBs: number}
  readonly measured: {
    readonly fp32Tflops: number | null
    readonly tensorTflops: number | null
    readonly copyGBs: number | null
    readonly cudaTotalMiB: number | null
  }
  readonly tensorFigure: 'bf16' | 'fp16' | null
  readonly sources: readonly string[]
  readonly fp32: MatchRow | null
  readonly tensor: MatchRow | null
}

export type MemoryRow = {
  readonly key: string
  readonly vramMiB: number
  readonly cudaTotalMiB: number
  readonly cudaTotalBasis: 'measured' | 'assumed'
  readonly pinnedMiB: number | null
  readonly allocatableMiB: number
  readonly noMpsCapMiB: number
}

export type SessionRow = {
  readonly file: string
  readonly shape: string
  readonly report: PerfReport
}

export type FidelityReport = {
  readonly host: {readonly key: string; readonly name: string}
  readonly cards: readonly CardRow[]
  readonly leaveOneOut: {
    readonly rows: readonly LeaveOneOutRow[]
    readonly fp32: {readonly cards: number; readonly within10: number; readonly medianAbsPct: number}
    readonly tensor: {readonly cards: number; readonly within20: number; readonly medianAbsPct: number}
  }
  readonly memory: readonly MemoryRow[]
  readonly sessions: readonly SessionRow[]
}

/** A GPU measurement kept as a fixture, with what it was: a whole GPU, or an MPS client of some SMs and a pinned limit. */
export type SessionFixture = {readonly file: string; readonly measurement: PerfMeasurement}

export function fidelityReport(catalog: Catalog, hostKey: string, sessions: readonly SessionFixture[]): FidelityReport {
  const model = catalog.hosts.find((h) => h.key === hostKey)
  if (!model) throw new Error(`no host model ${hostKey}`)
  const host = planHostFromModel(model, {mpsAvailable: true})
  const measuredCards = catalog.targets.filter((t) => (t.measured ?? []).some((m) => m.method === REFERENCE_GEMM_METHOD))
  const loo = leaveOneOut(catalog.targets)
  const fp32 = loo.filter((r) => r.fp32 !== null).map((r) => Math.abs(r.fp32!.errorPct))
  const tensor = loo.filter((r) => r.tensor !== null).map((r) => Math.abs(r.tensor!.errorPct))
  return {
    host: {key: model.key, name: model.name},
    cards: measuredCards.map((t) => cardRow(t, model, host)),
    leaveOneOut: {
      rows: loo,
      fp32: {cards: fp32.length, within10: fp32.filter((e) => e <= 10).length, medianAbsPct: median(fp32)},
      tensor: {cards: tensor.length, within20: tensor.filter((e) => e <= 20).length, medianAbsPct: median(tensor)},
    },
    memory: catalog.targets.filter((t) => t.reference?.totalMemoryMiB).map((t) => memoryRow(t, host)),
    sessions: sessions.map((s) => sessionRow(s, model, catalog)),
  }
}

function cardRow(t: Target, model: HostModel, host: ReturnType<typeof planHostFromModel>): CardRow {
  const r = t.reference!
  const measured = (a: {basis: string; value: number} | null | undefined) => (a?.basis === 'measured' ? a.value : null)
  const match = (objective: Objective, axis: 'fp32Tflops' | 'bf16Tflops', card: number | null): MatchRow | null => {
    if (card === null) return null
    let plan: Plan
    try {
      plan = planCosplay(t, host, objective)
    } catch {
      return null
    }
    if (!plan.measured) return null
    const rates = hostRatesOf(model)!
    const at = (sms: number) => measuredAt(model, rates, sms, plan.effectiveClockMHz, plan.measured!.expected.bandwidthGBs)[axis]
    const halfTpc = round(Math.max(at(plan.smCount + 2) - at(plan.smCount), plan.smCount > 2 ? at(plan.smCount) - at(plan.smCount - 2) : 0) / 2, 2)
    const expected = plan.measured.expected[axis]
    const whole = measuredAt(model, rates, model.smCount, model.clockMaxMHz, model.bandwidthGBs)[axis]
    return {
      slice: plan.mig?.profile ?? 'whole GPU',
      smCount: plan.smCount,
      clockMHz: plan.effectiveClockMHz,
      expected,
      card,
      errorPct: round(((expected - card) / card) * 100),
      halfTpc,
      within: Math.abs(expected - card) <= Math.max(0.03 * card, halfTpc) + 1e-9,
      beyondHost: whole < card * 0.97,
    }
  }
  return {
    key: t.key,
    name: t.name,
    datasheet: {fp32Tflops: t.fp32Tflops, tensorTflops: t.bf16Tflops ?? t.fp16Tflops, bandwidthGBs: t.bandwidthGBs},
    measured: {
      fp32Tflops: measured(r.fp32Tflops),
      tensorTflops: measured(r.tensorTflops),
      copyGBs: measured(r.copyGBs),
      cudaTotalMiB: r.totalMemoryMiB?.value ?? null,
    },
    tensorFigure: t.bf16Tflops !== null ? 'bf16' : t.fp16Tflops !== null ? 'fp16' : null,
    sources: [...new Set((t.measured ?? []).map((m) => m.source.split(' ')[0]))],
    fp32: match('fp32', 'fp32Tflops', measured(r.fp32Tflops)),
    tensor: match('bf16', 'bf16Tflops', measured(r.tensorTflops)),
  }
}

function memoryRow(t: Target, host: ReturnType<typeof planHostFromModel>): MemoryRow {
  const mps = planCosplay(t, host).memory!
  const noMps = planCosplay(t, {...host, mpsAvailable: false}).memory!
  return {
    key: t.key,
    vramMiB: mps.vramMiB,
    cudaTotalMiB: mps.cudaTotalMiB,
    cudaTotalBasis: mps.cudaTotalBasis,
    pinnedMiB: mps.hardLimitMiB,
    allocatableMiB: mps.allocatableMiB,
    noMpsCapMiB: noMps.allocatorCapMiB,
  }
}

/** A fixture measured on the host's own card: held to what a plan of its SMs and pinned limit would expect. */
function sessionRow(s: SessionFixture, model: HostModel, catalog: Catalog): SessionRow {
  const m = s.measurement
  const smCount = typeof m.device.smCount === 'number' ? m.device.smCount : model.smCount
  const env = (m.device.mps as {env?: Record<string, string>} | undefined)?.env ?? {}
  const pinnedMiB = Number(env.GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB) || null
  const rates = hostRatesOf(model)!
  const measured = measuredAt(model, rates, smCount, model.clockMaxMHz, model.bandwidthGBs)
  const card = catalog.targets.find((t) => t.key === model.measuredAs)
  const overhead = model.mpsClientOverheadMiB?.value ?? 0
  const report = perfReport(
    m,
    {
      hostModel: model.key,
      targetKey: card?.key ?? model.key,
      effectiveClockMHz: model.clockMaxMHz,
      ...(model.tensorClockMaxMHz ? {tensorClockMaxMHz: model.tensorClockMaxMHz} : {}),
      hardCapPlanned: pinnedMiB !== null,
      measured,
      ...(pinnedMiB !== null ? {allocatableGiB: round((pinnedMiB - overhead) / 1024, 3)} : {}),
      peak: {fp32Tflops: 0, bf16Tflops: 0, bandwidthGBs: 0, vramGiB: typeof m.axes.vram.capGiB === 'number' ? m.axes.vram.capGiB : 0},
      target: {fp32Tflops: 0, bf16Tflops: null, bandwidthGBs: 0, vramGB: 0},
    },
    null,
    // the card's own figures say something only about a session that had all of it
    pinnedMiB === null ? card?.reference : undefined,
    model.measuredRates,
  )
  const shape = pinnedMiB === null ? `whole GPU (${smCount} SMs)` : `MPS client, ${smCount} of ${model.smCount} SMs, ${pinnedMiB} MiB pinned`
  return {file: s.file, shape, report}
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return round(sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2)
}
