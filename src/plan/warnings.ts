import type {Target} from '../catalog/types.js'
import type {Plan, PlanConstraints, PlanHost} from './types.js'

/** Beyond this the plan says an axis does not match. */
const TOLERANCE_PCT = 10

function pct(value: number): string {
  return `${value > 0 ? '+' : ''}${value.toFixed(0)}%`
}

function fp32Reason(objective: Plan['objective'], fp32Pct: number): string {
  if (objective !== 'fp32') return `; matching ${objective} costs it (--match fp32 puts FP32 first)`
  return fp32Pct < 0 ? "; no free slice that holds the VRAM reaches it at this GPU's clocks" : '; even the lowest clock is too fast'
}

/** The throughput figures the plan was made on: measured (what the slice and the card measure) or datasheet. */
function basisFigures(target: Target, plan: Omit<Plan, 'warnings'>) {
  if (plan.basis === 'measured' && plan.measured) {
    const m = plan.measured
    return {
      expected: m.expected,
      target: {fp32Tflops: m.target.fp32Tflops, bf16Tflops: target.bf16Tflops === null ? null : m.target.bf16Tflops, bandwidthGBs: m.target.bandwidthGBs},
      errors: m.errors,
      on: 'measured on the card',
    }
  }
  return {
    expected: plan.expected,
    target: {fp32Tflops: target.fp32Tflops, bf16Tflops: target.bf16Tflops, bandwidthGBs: target.bandwidthGBs},
    errors: plan.errors,
    on: 'on the target',
  }
}

/** One honest sentence, with the numbers, for every axis the plan cannot match. */
export function explainPlan(target: Target, host: PlanHost, plan: Omit<Plan, 'warnings'>, tooBigForAnySlice: boolean, constraints: PlanConstraints): string[] {
  const warnings: string[] = []
  const {expected, errors, target: wanted, on} = basisFigures(target, plan)

  if (host.profiles === null) {
    const reason = host.migUnavailableReason ?? 'this GPU has no MIG'
    warnings.push(
      `MIG is not available (${reason}): the whole GPU (${plan.smCount} SMs) is used, with a clock lock, a power cap and a ${plan.vramCapGiB} GiB VRAM cap`,
    )
  }

  if (tooBigForAnySlice) {
    warnings.push(`VRAM: the target has ${target.vramGB} GB but the largest slice holds ${plan.expected.vramGB} GiB; the cap is ${plan.expected.vramGB} GiB`)
  }

  if (plan.basis === 'measured' && plan.measured) {
    const estimated = (['fp32', 'bf16', 'bandwidth'] as const).filter((a) => plan.measured!.targetBasis[a] === 'estimated')
    if (estimated.length > 0) {
      warnings.push(
        `Estimate: no published measurement of a ${target.name} for ${estimated.map((a) => (a === 'bf16' ? 'tensor' : a === 'bandwidth' ? 'copy' : 'FP32')).join(', ')}; ` +
          'its figures are estimated from its datasheet (power per SM), so the expectation is an estimate too',
      )
    }
  }

  if (Math.abs(errors.fp32Pct) > TOLERANCE_PCT) {
    warnings.push(
      `FP32: ${expected.fp32Tflops} TFLOPS expected vs ${wanted.fp32Tflops} ${on} (${pct(errors.fp32Pct)})` + fp32Reason(plan.objective, errors.fp32Pct),
    )
  }

  if (target.bf16Tflops === null) {
    warnings.push(
      `BF16: the target (${target.arch}) has no BF16; bf16 code runs here but would fail on a real ${target.name}. The costume reports is_bf16_supported() = False`,
    )
  } else if (errors.bf16Pct !== null && errors.bf16Pct > TOLERANCE_PCT) {
    warnings.push(
      `BF16 tensor: ${expected.bf16Tflops} TFLOPS expected vs ${wanted.bf16Tflops} ${on} (${pct(errors.bf16Pct)}): ` +
        `${host.model.arch} tensor cores do ${host.model.bf16FlopsPerSmClk / host.model.fp32FlopsPerSmClk}x the FP32 rate per SM; --match bf16 trades FP32 for it`,
    )
  } else if (errors.bf16Pct !== null && errors.bf16Pct < -TOLERANCE_PCT) {
    warnings.push(`BF16 tensor: ${expected.bf16Tflops} TFLOPS expected vs ${wanted.bf16Tflops} ${on} (${pct(errors.bf16Pct)})`)
  }

  if (Math.abs(errors.bandwidthPct) > TOLERANCE_PCT) {
    const why = plan.mig
      ? `a ${plan.mig.profile} slice owns ${plan.mig.memorySlices}/${host.model.mig?.memorySlices} of the memory system`
      : "the whole GPU's memory system is used"
    warnings.push(
      `Bandwidth: ${expected.bandwidthGBs} GB/s expected vs ${wanted.bandwidthGBs} ${on} (${pct(errors.bandwidthPct)}): ${why}; the clock lock does not change it`,
    )
  }

  if (!host.mpsAvailable && host.profiles !== null) {
    warnings.push(
      'MPS: no nvidia-cuda-mps-control on this host, so a slice is shaped by the GPU-wide clock and power limit (they bind every tenant) and the VRAM cap holds for torch/JAX/CuPy only (the costume enforces it, not the driver)',
    )
  } else if (plan.mps === null && plan.memory) {
    warnings.push(
      `VRAM: no MPS pinned limit, so the ${plan.memory.allocatorCapMiB} MiB cap holds for torch/JAX/CuPy only (the costume enforces it, not the driver)`,
    )
  }
  if (constraints.clockMHz !== undefined) {
    const held = constraints.clockMHz === null ? 'unlocked' : `locked at ${constraints.clockMHz} MHz`
    warnings.push(`Clocks: another session on this GPU holds them ${held}; this plan shares that setting (figures above use it)`)
  }
  if (plan.powerLimitW === null) {
    // nothing to say: the limit is left as found, and power is GPU-wide (a slice cannot be capped on its own)
  } else if (constraints.powerLimitW !== undefined && constraints.powerLimitW !== null && constraints.powerLimitW !== target.tdpW) {
    warnings.push(`Power: another session on this GPU holds the limit at ${constraints.powerLimitW} W; this plan shares it`)
  } else if (plan.powerLimitW !== target.tdpW) {
    warnings.push(
      `Power: the target's ${target.tdpW} W is outside this GPU's ${host.powerRangeW.min}-${host.powerRangeW.max} W range; the cap is ${plan.powerLimitW} W`,
    )
  }

  if (plan.needsMigEnable) {
    warnings.push('MIG mode was off on this GPU: up turns it on (the GPU must be idle), and the last session to end turns it off again')
  }
  return warnings
}
