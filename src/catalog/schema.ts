import * as z from 'zod'

import {ARCHS} from './archs.js'
import {MEASURE_METHODS} from './measure-methods.js'

/**
 * Strict schemas for catalog files (built-in and catalog.d/). Strict so a typo in a user file
 * (`smcount:`) is an error that names the field, not a silently ignored key.
 *
 * The catalog's types (types.ts) are inferred from these. Field names are the YAML keys in catalog/*.yaml
 * and the JSON keys of `ls`/`info`/`plan`. Throughput is DENSE (no 2:4 sparsity); tensor figures are
 * FP16/BF16 inputs with FP32 accumulate.
 */
const positive = z.number().positive()
const positiveInt = z.number().int().positive()
const tflopsOrNull = positive.nullable()
const catalogKey = z.string().regex(/^[a-z0-9][a-z0-9_]*$/, 'expected lower_snake_case')

export const archSchema = z.enum(ARCHS)

/** The figures one measurement may give: each optional, at least one present. */
const MEASURED_FIGURES = ['fp32Tflops', 'tf32Tflops', 'bf16Tflops', 'fp16Tflops', 'copyGBs', 'totalMemoryMiB', 'contextMiB'] as const

/**
 * What a card measured in one benchmark, with where it comes from and how the figures were picked: one source of
 * truth for what a card really does (datasheet figures stay beside it). Figures are per card, whole GPU.
 */
export const measurementSchema = z
  .strictObject({
    /** how it was measured (measure-methods.ts): figures are compared only with the same method, or named beside it */
    method: z.enum(MEASURE_METHODS),
    /** where: a repository file at a commit, a URL, or one of this project's fixtures */
    source: z.string().min(1),
    /** the rows (lines, entries) of the source the figures come from, as the source names them */
    rows: z.array(z.string().min(1)).min(1),
    /** how the figures were picked where the source has several rows, e.g. the median of the bare-metal rows */
    rule: z.string().min(1).optional(),
    /** rows of the source for this card that were not used, each with why */
    setAside: z.array(z.strictObject({row: z.string().min(1), why: z.string().min(1)})).optional(),
    /** FP32 GEMM with TF32 off */
    fp32Tflops: positive.optional(),
    tf32Tflops: positive.optional(),
    /** BF16 GEMM (FP32 accumulate) */
    bf16Tflops: positive.optional(),
    /** FP16 GEMM as torch runs it by default (it may accumulate in FP16 on GeForce) */
    fp16Tflops: positive.optional(),
    /** device-to-device copy, bytes read and written */
    copyGBs: positive.optional(),
    /** what CUDA reports as the device's total memory (torch total_memory): the VRAM less the driver's reserve */
    totalMemoryMiB: positive.optional(),
    /** what a CUDA context with torch takes of it */
    contextMiB: positive.optional(),
    notes: z.string().optional(),
  })
  .refine((m) => MEASURED_FIGURES.some((f) => m[f] !== undefined), {message: `expected at least one of ${MEASURED_FIGURES.join(', ')}`})

/** A throughput curve over the SMs a client is given (an MPS sweep on a host), for the per-SM rate. */
export const smCurveSchema = z.strictObject({
  axis: z.enum(['fp32', 'bf16']),
  method: z.enum(MEASURE_METHODS),
  source: z.string().min(1),
  /** [SMs, TFLOPS] at the host's clock in force, ascending SMs, the whole GPU last */
  points: z.array(z.tuple([positive.int(), positive])).min(2),
})

export const targetSchema = z.strictObject({
  key: catalogKey,
  /** display name, also what the costume reports (torch, pynvml, nvidia-smi), e.g. "NVIDIA GeForce RTX 3090" */
  name: z.string().min(1),
  aliases: z.array(z.string().min(1)).default([]),
  arch: archSchema,
  chip: z.string().min(1),
  computeCapability: z.string().regex(/^\d+\.\d+$/, 'expected a quoted "major.minor" string'),
  smCount: positiveInt,
  boostClockMHz: positive,
  /** advertised capacity in GB; the costume caps at the same number of GiB, as nvidia-smi shows such a card */
  vramGB: positive,
  memoryType: z.string().min(1),
  bandwidthGBs: positive,
  l2CacheMB: positive.nullable(),
  fp32Tflops: positive,
  /** FP16 tensor with FP32 accumulate; null when the card has no tensor cores */
  fp16Tflops: tflopsOrNull,
  /** BF16 tensor (FP32 accumulate); null when the card has no BF16 (Volta, Turing) */
  bf16Tflops: tflopsOrNull,
  tf32Tflops: tflopsOrNull,
  fp8Tflops: tflopsOrNull,
  tdpW: positive,
  source: z.string().min(1),
  notes: z.string().optional(),
  /** what the card measures in published benchmarks (sourced; optional): the planner aims at these, not the datasheet */
  measured: z.array(measurementSchema).min(1).optional(),
  /**
   * derived when the catalog is loaded (measured, else estimated; what `info --json` prints), so an entry copied from
   * `info --json` loads: a value given here is ignored and derived again
   */
  reference: z.unknown().optional(),
})

/**
 * The fields every view of a MIG GPU-instance profile shares (the catalog's, a live `mig -lgip` row, the
 * planner's option, doctor's row); each adds its own fields to these.
 */
export const migProfileBaseSchema = z.strictObject({
  /** without the "MIG " prefix, e.g. "1g.18gb" or "1g.18gb+me" */
  name: z.string().regex(/^\d+g\.\d+gb(\+[a-z.]+|-me)?$/, 'expected a profile name like "1g.18gb" or "1g.18gb+me"'),
  id: z.number().int().nonnegative(),
  smCount: positiveInt,
  memoryGiB: positive,
})

/** One `nvidia-smi mig -lgip` row, as a catalog host model states it. */
export const migProfileSchema = migProfileBaseSchema.extend({
  memorySlices: positiveInt,
  maxInstances: positiveInt,
})

export const hostModelSchema = z
  .strictObject({
    key: catalogKey,
    name: z.string().min(1),
    /** names nvidia-smi prints for this model, used to recognise a probed GPU */
    smiNames: z.array(z.string().min(1)).min(1),
    aliases: z.array(z.string().min(1)).default([]),
    arch: archSchema,
    smCount: positiveInt,
    clockMinMHz: positive,
    clockMaxMHz: positive,
    /** NVIDIA quotes tensor peaks at a lower clock than FP32 (H100/H200: 1830 vs 1980 MHz); null = same as max */
    tensorClockMaxMHz: positive.nullable(),
    powerMinW: positive,
    powerMaxW: positive,
    powerDefaultW: positive,
    bandwidthGBs: positive,
    memoryGiB: positive,
    fp32FlopsPerSmClk: positive,
    bf16FlopsPerSmClk: positive,
    /** PCI device ids as nvidia-smi -q prints them ("0x233510DE"), for mig-parted's device-filter; absent where unsourced */
    pciDeviceIds: z
      .array(z.string().regex(/^0x[0-9A-F]{4}10DE$/, 'expected "0xDDDD10DE" (device id, then NVIDIA\'s vendor id 10DE, upper-case hex)'))
      .min(1)
      .optional(),
    /** null when the GPU has no MIG */
    mig: z
      .strictObject({
        memorySlices: positiveInt,
        computeSlices: positiveInt,
        profiles: z.array(migProfileSchema).min(1),
      })
      .nullable(),
    /** the target entry that is this same card: its measured figures are this host's whole-GPU rates */
    measuredAs: catalogKey.optional(),
    /** per-SM throughput where it was measured (an MPS sweep): a client's rate depends on how many SMs draw power */
    smCurves: z.array(smCurveSchema).optional(),
    /** what an MPS client on this host cannot allocate of its pinned limit: its CUDA context and library buffers */
    mpsClientOverheadMiB: z.strictObject({value: positive, source: z.string().min(1)}).optional(),
    source: z.string().min(1),
    notes: z.string().optional(),
  })
  .superRefine((host, ctx) => {
    // The planner divides and clamps by these; an inverted range would give nonsense plans, not an error.
    if (host.clockMinMHz > host.clockMaxMHz) ctx.addIssue({code: 'custom', path: ['clockMinMHz'], message: 'must not exceed clockMaxMHz'})
    if (host.powerMinW > host.powerDefaultW || host.powerDefaultW > host.powerMaxW) {
      ctx.addIssue({code: 'custom', path: ['powerDefaultW'], message: 'must lie between powerMinW and powerMaxW'})
    }
    host.smCurves?.forEach((curve, i) => {
      const sms = curve.points.map(([smCount]) => smCount)
      if (sms.some((n, k) => k > 0 && n <= sms[k - 1])) ctx.addIssue({code: 'custom', path: ['smCurves', i, 'points'], message: 'SMs must ascend'})
      if (sms[sms.length - 1] !== host.smCount) ctx.addIssue({code: 'custom', path: ['smCurves', i, 'points'], message: 'must end at the whole GPU (smCount)'})
    })
    host.mig?.profiles.forEach((profile, i) => {
      if (profile.memorySlices > host.mig!.memorySlices) {
        ctx.addIssue({code: 'custom', path: ['mig', 'profiles', i, 'memorySlices'], message: 'exceeds mig.memorySlices'})
      }
    })
  })

/** One catalog file: the built-in gpus.yaml/hosts.yaml, or a user file holding either list or both. */
export const catalogFileSchema = z.strictObject({
  version: z.literal(1),
  targets: z.array(targetSchema).optional(),
  hosts: z.array(hostModelSchema).optional(),
})

export type CatalogFile = z.infer<typeof catalogFileSchema>
