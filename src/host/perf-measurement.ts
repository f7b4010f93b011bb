import * as z from 'zod'

/**
 * What runtime-hooks/gpu_cosplay_perf.py prints: measurements only, no verdicts (src/plan/perf-verdict.ts
 * computes those, so the bands live in one place). Loose objects: the Python side may add diagnostics.
 */
const axis = z.looseObject({
  /** null when the axis failed (error) or was not measured (skipped) */
  measured: z.number().nonnegative().nullable(),
  unit: z.string(),
  error: z.string().optional(),
  skipped: z.string().optional(),
})

const vramAxis = axis.extend({
  capGiB: z.number().optional(),
  underCapOk: z.boolean().optional(),
  overCapRefused: z.boolean().optional(),
  /** the driver (cuMemAlloc_v2) refused an allocation past the limit (true), granted it (false), or could not tell (null) */
  hard: z.boolean().nullable().optional(),
  hardReason: z.string().optional(),
  cupy: z.record(z.string(), z.unknown()).optional(),
})

/** A sampled figure's spread (SM clock, power) as gpu_cosplay_perf.py summarises it; calibration files store the same. */
export const sampleSpread = z.strictObject({min: z.number(), median: z.number(), max: z.number()})
const spread = sampleSpread.nullable()

export const perfMeasurementSchema = z.looseObject({
  schema: z.literal(1),
  device: z.looseObject({
    name: z.string(),
    kind: z.enum(['cuda', 'cpu']),
    driver: z.string().nullable(),
    torch: z.string().optional(),
  }),
  axes: z.looseObject({fp32: axis, bf16: axis, bandwidth: axis, vram: vramAxis}),
  samples: z.looseObject({
    source: z.string().nullable(),
    count: z.number(),
    /** each row is tagged with the axis being timed when it was taken (`axis`: fp32, bf16, bandwidth, vram) */
    rows: z.array(z.record(z.string(), z.union([z.number(), z.string()]).nullable())),
    reason: z.string().optional(),
    summary: z
      .looseObject({
        smClockMHz: spread,
        powerW: spread,
        powerLimitW: spread.optional(),
        throttleReasons: z.array(z.string()),
        /** the same spreads over the rows taken while each axis was timed */
        byAxis: z.record(z.string(), z.looseObject({smClockMHz: spread})).optional(),
      })
      .optional(),
  }),
  elapsedS: z.number(),
})
export type PerfMeasurement = z.infer<typeof perfMeasurementSchema>
export type PerfSamples = PerfMeasurement['samples']

/** A measurement, a refusal the script explains itself (no torch, no CUDA), or null for output it did not write. */
export type PerfOutput =
  {readonly kind: 'measured'; readonly measurement: PerfMeasurement} | {readonly kind: 'refused'; readonly code: string; readonly message: string}

const refusal = z.strictObject({error: z.strictObject({code: z.string(), message: z.string()})})

export function parsePerfOutput(stdout: string): PerfOutput | null {
  let raw: unknown
  try {
    raw = JSON.parse(stdout)
  } catch {
    return null
  }
  const refused = refusal.safeParse(raw)
  if (refused.success) return {kind: 'refused', code: refused.data.error.code, message: refused.data.error.message}
  const measured = perfMeasurementSchema.safeParse(raw)
  return measured.success ? {kind: 'measured', measurement: measured.data} : null
}
