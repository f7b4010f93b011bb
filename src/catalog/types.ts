import type * as z from 'zod'

import type {DeepReadonly} from '../core/deep-readonly.js'
import type {achievedFractionSchema, archSchema, hostModelSchema, migProfileBaseSchema, migProfileSchema, targetSchema} from './schema.js'

/**
 * Catalog models, inferred from the schemas in schema.ts (the field docs live there). Type-only imports:
 * commands that read the precompiled catalog (dist/catalog.json) never load zod.
 */
export {ARCHS} from './archs.js'
export type Arch = z.infer<typeof archSchema>

/** A GPU the tool can imitate (catalog/gpus.yaml, or a user file in catalog.d/). */
export type Target = DeepReadonly<z.infer<typeof targetSchema>>

/** Measured / datasheet per axis, from a published benchmark named in `source`. */
export type AchievedFraction = DeepReadonly<z.infer<typeof achievedFractionSchema>>

/** The fields every view of a MIG GPU-instance profile shares: catalog, `mig -lgip` row, planner, doctor. */
export type MigProfileBase = DeepReadonly<z.infer<typeof migProfileBaseSchema>>

/** One `nvidia-smi mig -lgip` row, as a catalog host model states it. */
export type MigProfileSpec = DeepReadonly<z.infer<typeof migProfileSchema>>

/** A GPU the tool can run on (catalog/hosts.yaml). */
export type HostModel = DeepReadonly<z.infer<typeof hostModelSchema>>

/** A host model's MIG geometry; null on the model when the GPU has no MIG. */
export type HostMig = NonNullable<HostModel['mig']>

export type Catalog = {
  readonly targets: readonly Target[]
  readonly hosts: readonly HostModel[]
  /** files that contributed, for error messages and `doctor` */
  readonly files: readonly string[]
}
