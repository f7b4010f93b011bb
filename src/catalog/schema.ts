import {z} from 'zod'

import {ARCHS} from './types.js'

/**
 * Strict schemas for catalog files (built-in and catalog.d/). Strict so a typo in a user file
 * (`smcount:`) is an error that names the field, not a silently ignored key.
 */
const positive = z.number().positive()
const positiveInt = z.number().int().positive()
const tflopsOrNull = positive.nullable()
const achieved = z.number().positive().max(1.2)

export const targetSchema = z.strictObject({
  key: z.string().regex(/^[a-z0-9][a-z0-9_]*$/, 'expected lower_snake_case'),
  name: z.string().min(1),
  aliases: z.array(z.string().min(1)).default([]),
  arch: z.enum(ARCHS),
  chip: z.string().min(1),
  computeCapability: z.string().regex(/^\d+\.\d+$/, 'expected a quoted "major.minor" string'),
  smCount: positiveInt,
  boostClockMHz: positive,
  vramGB: positive,
  memoryType: z.string().min(1),
  bandwidthGBs: positive,
  l2CacheMB: positive.nullable(),
  fp32Tflops: positive,
  fp16Tflops: tflopsOrNull,
  bf16Tflops: tflopsOrNull,
  tf32Tflops: tflopsOrNull,
  fp8Tflops: tflopsOrNull,
  tdpW: positive,
  source: z.string().min(1),
  notes: z.string().optional(),
  achievedFraction: z
    .strictObject({fp32: achieved.optional(), bf16: achieved.optional(), bandwidth: achieved.optional(), source: z.string().min(1)})
    .optional(),
})

export const migProfileSchema = z.strictObject({
  name: z.string().regex(/^\d+g\.\d+gb(\+[a-z.]+|-me)?$/, 'expected a profile name like "1g.18gb" or "1g.18gb+me"'),
  id: z.number().int().nonnegative(),
  smCount: positiveInt,
  memoryGiB: positive,
  memorySlices: positiveInt,
  maxInstances: positiveInt,
})

export const hostModelSchema = z.strictObject({
  key: z.string().regex(/^[a-z0-9][a-z0-9_]*$/, 'expected lower_snake_case'),
  name: z.string().min(1),
  smiNames: z.array(z.string().min(1)).min(1),
  aliases: z.array(z.string().min(1)).default([]),
  arch: z.enum(ARCHS),
  smCount: positiveInt,
  clockMinMHz: positive,
  clockMaxMHz: positive,
  tensorClockMaxMHz: positive.nullable(),
  powerMinW: positive,
  powerMaxW: positive,
  powerDefaultW: positive,
  bandwidthGBs: positive,
  memoryGiB: positive,
  fp32FlopsPerSmClk: positive,
  bf16FlopsPerSmClk: positive,
  pciDeviceIds: z.array(z.string().regex(/^0x[0-9A-F]{4}10DE$/, 'expected "0xDDDD10DE" (device id, then NVIDIA\'s vendor id 10DE, upper-case hex)')).min(1).optional(),
  mig: z
    .strictObject({
      memorySlices: positiveInt,
      computeSlices: positiveInt,
      profiles: z.array(migProfileSchema).min(1),
    })
    .nullable(),
  source: z.string().min(1),
  notes: z.string().optional(),
}).superRefine((host, ctx) => {
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
