import * as z from 'zod'

import {sampleSpread} from './perf-measurement.js'

/**
 * What `gpu-cosplay calibrate` learnt about this host: the fraction of the datasheet peak each axis really
 * reaches, per GPU model and driver (a driver update changes cuBLAS and clocks, so it voids the figures).
 * Kept as one file per model and driver (apply/calibration-file.ts); plan/ receives the parsed value.
 */
const tflops = z.number().positive()
const fraction = z.number().positive().max(2)
const axisFigures = <T extends z.ZodType>(value: T) => z.strictObject({fp32Tflops: value, bf16Tflops: value, bandwidthGBs: value})

export const calibrationSchema = z.strictObject({
  version: z.literal(1),
  gpu: z.strictObject({model: z.string().min(1), name: z.string().min(1), uuid: z.string().min(1)}),
  driver: z.string().min(1),
  measuredAt: z.string().min(1),
  torch: z.string().nullable(),
  /** what the run achieved (TFLOPS, GB/s counting read + write); null where that axis failed */
  measured: axisFigures(tflops.nullable()),
  /** datasheet arithmetic for the whole GPU at its maximum clock, as plan computes it */
  peak: axisFigures(tflops),
  /** measured / peak; null where that axis failed (plan then uses the peak for it) */
  fractions: z.strictObject({fp32: fraction.nullable(), bf16: fraction.nullable(), bandwidth: fraction.nullable()}),
  samples: z.strictObject({
    smClockMHz: sampleSpread.nullable(),
    powerW: sampleSpread.nullable(),
    throttleReasons: z.array(z.string()),
  }),
})
export type Calibration = z.infer<typeof calibrationSchema>
export type CalibrationFractions = Calibration['fractions']
