/**
 * A type inferred from a zod schema, made read-only all the way down: schemas state the shape once, and
 * the values they describe (the catalog, a saved plan) are shared and never mutated after parsing.
 */
export type DeepReadonly<T> = T extends readonly (infer E)[] ? readonly DeepReadonly<E>[] : T extends object ? {readonly [K in keyof T]: DeepReadonly<T[K]>} : T
