import type * as z from 'zod'

import type {DeepReadonly} from '../core/deep-readonly.js'
import type {HostMeasuredRates, TargetReference} from './reference-types.js'
import type {archSchema, hostModelSchema, measurementSchema, migProfileBaseSchema, migProfileSchema, smCurveSchema, targetSchema} from './schema.js'

/**
 * Catalog models, inferred from the schemas in schema.ts (the field docs live there). Type-only imports:
 * commands that read the precompiled catalog (dist/catalog.json) never load zod.
 */
export {ARCHS} from './archs.js'
export type Arch = z.infer<typeof archSchema>

export type {AxisReference, HostMeasuredRates, ReferenceBasis, TargetReference} from './reference-types.js'

/**
 * A GPU the tool can imitate (catalog/gpus.yaml, or a user file in catalog.d/). `reference` is derived when the
 * catalog is loaded (what the card measures, or an estimate), never written in a file.
 */
export type Target = DeepReadonly<z.infer<typeof targetSchema>> & {readonly reference?: TargetReference}

/** One sourced measurement of a card (a `measured` entry). */
export type Measurement = DeepReadonly<z.infer<typeof measurementSchema>>

/** Throughput over the SMs a client gets, measured on a host (an MPS sweep). */
export type SmCurve = DeepReadonly<z.infer<typeof smCurveSchema>>

/** The fields every view of a MIG GPU-instance profile shares: catalog, `mig -lgip` row, planner, doctor. */
export type MigProfileBase = DeepReadonly<z.infer<typeof migProfileBaseSchema>>

/** One `nvidia-smi mig -lgip` row, as a catalog host model states it. */
export type MigProfileSpec = DeepReadonly<z.infer<typeof migProfileSchema>>

/** A GPU the tool can run on (catalog/hosts.yaml). `measuredRates` is derived at load from its `measuredAs` card. */
export type HostModel = DeepReadonly<z.infer<typeof hostModelSchema>> & {readonly measuredRates?: HostMeasuredRates}

export type Catalog = {
  readonly targets: readonly Target[]
  readonly hosts: readonly HostModel[]
  /** files that contributed, for error messages and `doctor` */
  readonly files: readonly string[]
}
