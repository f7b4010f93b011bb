import {type AchievedModel, estimateAchieved, estimateSource, measuredEntry, tensorFigure} from './achieved-model.js'
import {COPY_METHODS_BY_PREFERENCE, REFERENCE_GEMM_METHOD} from './measure-methods.js'
import type {AxisReference, Catalog, HostMeasuredRates, HostModel, Measurement, Target, TargetReference} from './types.js'

/**
 * A target's reference per axis: its measured figure in the reference method where a `measured` entry gives one,
 * else the estimate from its datasheet. Memory figures are only ever measured (no estimate).
 */
export function referenceOf(t: Target, model: AchievedModel): TargetReference {
  const estimate = estimateAchieved(t, model)
  const gemm = (figure: 'fp32Tflops' | 'bf16Tflops' | 'fp16Tflops', estimated: number, axis: 'fp32' | 'tensor'): AxisReference => {
    const entry = measuredEntry(t, figure, [REFERENCE_GEMM_METHOD])
    return entry ? fromEntry(entry, figure) : {value: estimated, basis: 'estimated', method: REFERENCE_GEMM_METHOD, source: estimateSource(model, axis)}
  }
  const tensor = tensorFigure(t)
  const copy = measuredEntry(t, 'copyGBs', COPY_METHODS_BY_PREFERENCE)
  const memory = (figure: 'totalMemoryMiB' | 'contextMiB'): AxisReference | null => {
    const entry = (t.measured ?? []).find((m) => m[figure] !== undefined)
    return entry ? fromEntry(entry, figure) : null
  }
  return {
    fp32Tflops: gemm('fp32Tflops', estimate.fp32Tflops, 'fp32'),
    tensorTflops: tensor === null || estimate.tensorTflops === null ? null : gemm(tensor, estimate.tensorTflops, 'tensor'),
    copyGBs: copy
      ? fromEntry(copy, 'copyGBs')
      : {value: estimate.copyGBs, basis: 'estimated', method: COPY_METHODS_BY_PREFERENCE[0], source: estimateSource(model, 'copy')},
    totalMemoryMiB: memory('totalMemoryMiB'),
    contextMiB: memory('contextMiB'),
  }
}

function fromEntry(entry: Measurement, figure: 'fp32Tflops' | 'bf16Tflops' | 'fp16Tflops' | 'copyGBs' | 'totalMemoryMiB' | 'contextMiB'): AxisReference {
  return {value: entry[figure]!, basis: 'measured', method: entry.method, source: entry.source}
}

/** A host model's whole-GPU rates: the reference of the target that is the same card, and its figures in this project's own methods. */
export function hostRatesOf(host: HostModel, targets: readonly Target[], model: AchievedModel): HostMeasuredRates | undefined {
  if (host.measuredAs === undefined) return undefined
  const card = targets.find((t) => t.key === host.measuredAs)
  if (!card) return undefined
  const perf = (card.measured ?? []).find((m) => m.method === 'cosplay-perf')
  const sweep = (card.measured ?? []).find((m) => m.method === 'mps-sweep-gemm' && m.bf16Tflops !== undefined)
  return {
    card: card.key,
    reference: card.reference ?? referenceOf(card, model),
    cosplayPerf: perf ? {fp32Tflops: perf.fp32Tflops ?? null, bf16Tflops: perf.bf16Tflops ?? null, copyGBs: perf.copyGBs ?? null, source: perf.source} : null,
    sweep: sweep ? {bf16Tflops: sweep.bf16Tflops!, source: sweep.source} : null,
  }
}

/** The catalog with every target's reference and every host's rates derived (what loadCatalog returns). */
export function withReferences(catalog: Catalog, model: AchievedModel): Catalog {
  const targets = catalog.targets.map((t) => ({...t, reference: referenceOf(t, model)}))
  const hosts = catalog.hosts.map((h) => {
    const measuredRates = hostRatesOf(h, targets, model)
    return measuredRates ? {...h, measuredRates} : h
  })
  return {...catalog, targets, hosts}
}
