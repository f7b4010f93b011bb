import * as z from 'zod'

import {OBJECTIVES} from './objectives.js'

/**
 * The shape of a Plan, stated once: the planner's types are inferred from it, and a session's journal
 * stores its plan validated against it. Only the apply layer loads this at run time (zod is not needed
 * for `plan`); everything else imports its types.
 */
const targetSummary = z.object({
  key: z.string(),
  name: z.string(),
  fp32Tflops: z.number(),
  bf16Tflops: z.number().nullable(),
  bandwidthGBs: z.number(),
  vramGB: z.number(),
  tdpW: z.number(),
})

const migChoice = z.object({
  profile: z.string(),
  profileId: z.number(),
  smCount: z.number(),
  memoryGiB: z.number(),
  memorySlices: z.number(),
})

/** Per-session shaping inside the session's own slice: an MPS control daemon's default limits. */
const mpsShaping = z.object({
  /** set_default_active_thread_percentage */
  activeThreadPercentage: z.number().int().min(1).max(100),
  /** the SMs a client gets at that percentage (see smsForPercentage) */
  smCount: z.number().int(),
  /** set_default_device_pinned_mem_limit 0 <N>M */
  pinnedMemLimitMiB: z.number().int(),
})

const gpuWide = z.object({
  /** this session locks the GPU's clocks (plan.clockMHz) */
  clockLock: z.boolean(),
  /** this session sets the GPU's power limit (plan.powerLimitW) */
  powerLimit: z.boolean(),
  /** why it holds them, or why not */
  reason: z.string(),
})

const expected = z.object({fp32Tflops: z.number(), bf16Tflops: z.number(), bandwidthGBs: z.number(), vramGB: z.number()})

/** signed percent, (expected - target) / target; null where the target has no such figure */
const axisErrors = z.object({fp32Pct: z.number(), bf16Pct: z.number().nullable(), bandwidthPct: z.number(), vramPct: z.number()})

/** What the plan's choice was measured against: what the cards measure, or today's datasheet arithmetic. */
export const PLAN_BASES = ['measured', 'datasheet'] as const

const referenceBasis = z.enum(['measured', 'estimated'])

/**
 * The plan in the measured basis: what the slice measures, computed from its own SMs and clock and the host's measured
 * rates, next to what the target measures (or, without a measurement, its estimate), with the method and sources.
 */
const measuredBlock = z.object({
  expected: z.object({fp32Tflops: z.number(), bf16Tflops: z.number(), bandwidthGBs: z.number()}),
  /** bf16: the target's BF16 GEMM, or its FP16 where it has no BF16; null without tensor cores */
  target: z.object({fp32Tflops: z.number(), bf16Tflops: z.number().nullable(), bandwidthGBs: z.number()}),
  targetBasis: z.object({fp32: referenceBasis, bf16: referenceBasis.nullable(), bandwidth: referenceBasis}),
  errors: z.object({fp32Pct: z.number(), bf16Pct: z.number().nullable(), bandwidthPct: z.number()}),
  /** the methods the figures are in (src/catalog/measure-methods.ts): GEMM for both, copy for the target and for this host */
  methods: z.object({gemm: z.string(), targetCopy: z.string(), hostCopy: z.string()}),
  /** where each host rate comes from (the card's catalog figure, a calibration) */
  hostRates: z.object({fp32: z.string(), bf16: z.string(), bandwidth: z.string()}),
  targetSources: z.object({fp32: z.string(), bf16: z.string().nullable(), bandwidth: z.string()}),
})

/** Memory as the card has it (plan/memory-limits.ts). */
const memoryBlock = z.object({
  vramMiB: z.number(),
  cudaTotalMiB: z.number(),
  cudaTotalBasis: z.enum(['measured', 'assumed']),
  hardLimitMiB: z.number().nullable(),
  hardLimitBy: z.enum(['mps', 'mig-slice']).nullable(),
  allocatorCapMiB: z.number(),
  allocatableMiB: z.number(),
  cardContextMiB: z.number().nullable(),
  hostMpsOverheadMiB: z.number().nullable(),
  note: z.string(),
})

/** One axis the objective weighs, with its error: so the trade the objective made is visible. */
const weighedAxis = z.object({
  /** fp32, bf16, fp16-tensor (a target without BF16: its FP16 tensor figure, met by the host's BF16 rate), bandwidth */
  axis: z.enum(['fp32', 'bf16', 'fp16-tensor', 'bandwidth']),
  expected: z.number(),
  target: z.number(),
  errorPct: z.number(),
})

/** `--count N`: N devices of the target's shape in one session, and where they go (plan/plan-ranks.ts). */
const ranksBlock = z.object({
  count: z.number().int().min(2),
  /** the GPUs the ranks go on, in rank order: each with how many of them (index null: planned against a model) */
  gpus: z.array(z.object({index: z.number().nullable(), ranks: z.number().int().min(1)})),
  /** what joins the ranks, as it is here (never the target's PCIe or NVLink) */
  link: z.object({kind: z.enum(['mig-instances', 'mps-clients', 'whole-gpus']), acrossGpus: z.boolean(), note: z.string()}),
  /** /dev/shm the session's container gets at least, for NCCL's shared-memory transport */
  shmMiB: z.number().int(),
})

export const planSchema = z.object({
  target: targetSummary,
  host: z.object({
    name: z.string(),
    index: z.number().nullable(),
    model: z.string(),
    /** the whole GPU's SMs (absent in plans journaled before it was recorded) */
    smCount: z.number().optional(),
  }),
  objective: z.enum(OBJECTIVES),
  mig: migChoice.nullable(),
  /** true when `up` must turn MIG mode on first */
  needsMigEnable: z.boolean(),
  /** SMs the workload can use: the slice's, or fewer under MPS */
  smCount: z.number(),
  /** the clock to lock (MHz); null = leave clocks unlocked (the plan runs at the clock in force) */
  clockMHz: z.number().nullable(),
  /** the clock the estimate assumes (the lock, or the maximum when unlocked) */
  effectiveClockMHz: z.number(),
  /** the power limit to set (W); null = leave the GPU's power limit as it is */
  powerLimitW: z.number().nullable(),
  mps: mpsShaping.nullable(),
  gpuWide,
  vramCapGiB: z.number(),
  vramCapMiB: z.number(),
  /** datasheet arithmetic for the slice and clock (peaks), and its errors against the target's datasheet */
  expected,
  errors: axisErrors,
  /** what the choice was made on (absent in plans journaled before it was recorded: datasheet) */
  basis: z.enum(PLAN_BASES).optional(),
  /** why the plan is on that basis */
  basisNote: z.string().optional(),
  /** the measured basis's figures; null where the host or the target has none */
  measured: measuredBlock.nullable().optional(),
  /** the session's memory limits as the card has them (absent in plans journaled before) */
  memory: memoryBlock.optional(),
  /** the axes the objective weighed (balanced: all of them), in the plan's basis */
  weighed: z.array(weighedAxis),
  /** a session of several devices (`--count N`, N >= 2); absent: one */
  ranks: ranksBlock.optional(),
  warnings: z.array(z.string()),
})

export type PlanShape = z.infer<typeof planSchema>
