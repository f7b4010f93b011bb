/**
 * The one check type: a named thing looked at, how it stands, and what was seen. Two vocabularies of status: a
 * readiness check (doctor, system status: is what gpu-cosplay needs here?) and a test verdict (verify: does the
 * session do what its plan says?).
 */

/** A readiness check's status: there, not there (a requirement fails), or there with a caveat. */
export type Readiness = 'ok' | 'missing' | 'warn'

/** A test's verdict, in the order its summary counts them. */
export const VERDICTS = ['PASS', 'FAIL', 'SKIP'] as const
export type Verdict = (typeof VERDICTS)[number]

export type Check<Status extends string> = {
  readonly name: string
  readonly status: Status
  readonly detail: string
  /** what to do about it; empty when the check holds */
  readonly fix?: readonly string[]
}

/** doctor's and system status's checks: each says what to do about it (empty when ok). */
export type ReadinessCheck = Check<Readiness> & {readonly fix: readonly string[]}

/** verify's checks, from verify.py and the MPS probe. */
export type VerdictCheck = Check<Verdict>

/** Whether no readiness check is missing (warnings do not count). */
export function noneMissing(checks: readonly ReadinessCheck[]): boolean {
  return checks.every((c) => c.status !== 'missing')
}

/** How many of `statuses` are each of `keys`, with every key counted (0 too), in the order of `keys`. */
export function tally<Status extends string>(keys: readonly Status[], statuses: Iterable<Status>): Record<Status, number> {
  const counts = Object.fromEntries(keys.map((key) => [key, 0])) as Record<Status, number>
  for (const status of statuses) counts[status] += 1
  return counts
}
