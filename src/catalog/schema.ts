import * as z from 'zod'

import {ARCHS} from './archs.js'

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
const achieved = z.number().positive().max(1.2)

export const archSchema = z.enum(ARCHS)

/** Measured / datasheet per axis, from a published benchmark named in `source`. */
export const achievedFractionSchema = z.strictObject({
  fp32: achieved.optional(),
  bf16: achieved.optional(),
  bandwidth: achieved.optional(),
  source: z.string().min(1),
})

export const targetSchema = z.strictObject({
  key: z.string().regex(/^[a-z0-9][a-z0-9_]*$/, 'expected lower_snake_case'),
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
  /** what the card really reaches in a plain GEMM / copy benchmark, as a fraction of the figures above (sourced; optional) */
  achievedFraction: achievedFractionSchema.optional(),
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
    key: z.string().regex(/^[a-z0-9][a-z0-9_]*$/, 'expected lower_snake_case'),
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
    source: z.string().min(1),
    notes: z.string().optional(),
  })
  .superRefine((host, ctx) => {
    // The planner divides and clamps by these; an inverted range would give nonsense plans, not an error.
    if (host.clockMinMHz > host.clockMaxMHz) ctx.addIssue({code: 'custom', path: ['clockMinMHz'], message: 'must not exceed clockMaxMHz'})
    if (host.powerMinW > host.powerDefaultW || host.powerDefaultW > host.powerMaxW) {
      ctx.addIssue({code: 'custom', path: ['powerDefaultW'], message: 'must lie between powerMinW and powerMaxW'})
    }
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
