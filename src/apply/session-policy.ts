/**
 * Fair share on one box (the box's configuration, box-config.ts): how long a session lives, how long it may sit idle,
 * and how much one user may hold at once. Pure: the configuration and who asks come in as arguments. Without an
 * installation (a user's own sandbox) there is no policy: no default TTL, no maximum, no idle reclaim, no quota.
 */
import type {BoxConfig, QuotaLimits} from '../core/box-config.js'
import {durationMs, formatDuration, parseDuration} from '../core/duration.js'
import {InputError} from '../core/errors.js'

export type SessionPolicy = {
  /** the TTL of an `up` without --ttl (null: none, unless maxTtlMs is set: then that) */
  readonly defaultTtlMs: number | null
  /** the longest TTL a member may ask for, and the most time left an extend may give */
  readonly maxTtlMs: number | null
  /** a session idle this long is ended (null: never) */
  readonly idleReclaimMs: number | null
}

export const NO_POLICY: SessionPolicy = {defaultTtlMs: null, maxTtlMs: null, idleReclaimMs: null}

/** The policy a configuration sets; a missing configuration (a sandbox) sets none. */
export function sessionPolicyOf(config: Pick<BoxConfig, 'defaultTtl' | 'maxTtl' | 'idleReclaim'> | null): SessionPolicy {
  const ms = (text: string | null | undefined) => (text ? durationMs(text) : null)
  return {defaultTtlMs: ms(config?.defaultTtl), maxTtlMs: ms(config?.maxTtl), idleReclaimMs: ms(config?.idleReclaim)}
}

/** The warning comes this long before a session is ended: ten minutes, or a fifth of a shorter lifetime. */
export const WARN_LEAD_MAX_MS = 10 * 60_000
export function warnLeadMs(lifetimeMs: number): number {
  return Math.min(WARN_LEAD_MAX_MS, Math.floor(lifetimeMs / 5))
}

/**
 * The TTL of a new session: --ttl as given (checked against the maximum; root may exceed it), else the box's default,
 * else its maximum, else none (null).
 */
export function resolveTtlMs(requested: string | undefined, policy: SessionPolicy, isRoot: boolean): number | null {
  return sessionTtlMs(requested === undefined ? null : parseDuration(requested, '--ttl'), policy, isRoot)
}

/** The TTL of a session asked for with requestedMs (null: none asked, the box's default applies). */
export function sessionTtlMs(requestedMs: number | null, policy: SessionPolicy, isRoot: boolean): number | null {
  if (requestedMs === null) return policy.defaultTtlMs ?? policy.maxTtlMs
  assertWithinMax(requestedMs, policy, isRoot, `--ttl ${formatDuration(requestedMs)}`)
  return requestedMs
}

export function assertWithinMax(ms: number, policy: SessionPolicy, isRoot: boolean, what: string): void {
  if (isRoot || policy.maxTtlMs === null || ms <= policy.maxTtlMs) return
  throw new InputError('TTL_TOO_LONG', `${what} is more than this box allows (${formatDuration(policy.maxTtlMs)})`, {
    fix: [`ask for at most ${formatDuration(policy.maxTtlMs)}`, 'the maximum is the admin’s: system install --max-ttl'],
  })
}

/** What one user may hold at once, and where that limit comes from (for the error that names it). */
export type Quota = {
  readonly sessions: number | null
  readonly slices: number | null
  /** "the box's quota", "group ml's quota", "alice's quota" */
  readonly source: string
}

/**
 * The caller's quota: their own entry under `users`, else the most generous entry among their groups (per field), else
 * the box's default. Root holds no quota (null), nor does anyone when the box sets none.
 */
export function quotaFor(
  user: {readonly user: string; readonly isRoot: boolean},
  config: Pick<BoxConfig, 'quotas'> | null,
  groups: readonly string[],
): Quota | null {
  const quotas = config?.quotas
  if (user.isRoot || !quotas) return null
  const own = quotas.users?.[user.user]
  if (own) return quotaOf(own, quotas, `${user.user}'s quota`)
  const mine = groups.filter((g) => quotas.groups?.[g] !== undefined)
  if (mine.length > 0) {
    const most = (field: keyof QuotaLimits) => {
      const values = mine.map((g) => quotas.groups![g][field] ?? quotas[field] ?? null)
      return values.includes(null) ? null : Math.max(...(values as number[]))
    }
    const quota = {sessions: most('sessions'), slices: most('slices'), source: `group ${mine.join('/')}'s quota`}
    return quota.sessions === null && quota.slices === null ? null : quota
  }
  return quotaOf(quotas, quotas, "the box's quota")
}

function quotaOf(limits: QuotaLimits, defaults: QuotaLimits, source: string): Quota | null {
  const sessions = limits.sessions === undefined ? (defaults.sessions ?? null) : limits.sessions
  const slices = limits.slices === undefined ? (defaults.slices ?? null) : limits.slices
  return sessions === null && slices === null ? null : {sessions, slices, source}
}
