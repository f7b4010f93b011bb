import type {SessionView} from '../client/read-host-status.js'
import type {QueuedRequest} from '../client/read-host-status.js'
import {formatDuration} from '../core/duration.js'
import {formatTable} from './format-table.js'

/** The text view of `ps`: a session a row (with a HOST column across boxes), then which crashed. */
export function renderPs(sessions: readonly (SessionView & {host?: string})[]): string {
  if (sessions.length === 0) return 'No sessions.'
  const crashed = sessions.filter((s) => s.crashed).map((s) => s.name)
  const rows = sessions.map((s) => [
    s.name,
    s.owner,
    s.lease ? `lease: ${describeHold(s.lease)}` : (s.target ?? '-'),
    s.gpuIndex === null ? '?' : String(s.gpuIndex),
    s.mig ? slicesOf(s.mig, s.ranks) : s.lease ? '-' : s.ranks ? `${s.ranks.length} MPS shares` : 'whole GPU',
    stateOf(s),
    s.container ? `${s.container.name} (${s.containerState ?? 'unknown'})` : '-',
  ])
  // a session with a TTL shows the time it has left; boxes where none has one keep the table as it was
  const withEnd = sessions.some((s) => s.expiresAt)
  if (withEnd) rows.forEach((row, i) => row.push(timeLeft(sessions[i])))
  const headers = ['NAME', 'OWNER', 'TARGET', 'GPU', 'SLICE', 'STATE', 'CONTAINER', ...(withEnd ? ['LEFT'] : [])]
  const onHosts = sessions.some((s) => s.host !== undefined)
  const table = onHosts
    ? formatTable(
        ['HOST', ...headers],
        rows.map((row, i) => [sessions[i].host ?? '-', ...row]),
      )
    : formatTable(headers, rows)
  if (crashed.length === 0) return table
  return `${table}\n\n${crashed.join(', ')} crashed: run gpu-cosplay recover to clean up`
}

function timeLeft(s: SessionView): string {
  if (!s.expiresAt || s.timeLeftMs === null) return '-'
  return s.timeLeftMs === 0 ? 'ending' : formatDuration(s.timeLeftMs)
}

/**
 * `ps --queue`: the `up --wait` requests, in the order they will be served: the session name each asked for (or would
 * get), its owner, its target, since when it waits. A waiter not heard from lately is marked: the others pass it by.
 * Entries written before names and targets were kept show "-" and what they wait for.
 */
export function renderQueue(queue: readonly QueuedRequest[]): string {
  if (queue.length === 0) return 'No request is waiting.'
  return formatTable(
    ['#', 'NAME', 'OWNER', 'TARGET', 'SINCE'],
    queue.map((q) => [q.stalled ? `${q.position} (not heard, passed by)` : String(q.position), q.name ?? '-', q.user, q.target ?? q.want, q.enqueuedAt]),
  )
}

/** What a lease hold holds, e.g. "clock 1395 MHz, power 300 W". */
export function describeHold(hold: {clockMHz: number | null; powerLimitW: number | null}): string {
  const parts = [...(hold.clockMHz === null ? [] : [`clock ${hold.clockMHz} MHz`]), ...(hold.powerLimitW === null ? [] : [`power ${hold.powerLimitW} W`])]
  return parts.join(', ')
}

/** A slice the session planned but has not made yet (its up was stopped before) has no instance to name. */
export function sliceOf(mig: {profile: string; gpuInstanceId: number | null}): string {
  return mig.gpuInstanceId === null ? `${mig.profile} (not created)` : `${mig.profile} GI ${mig.gpuInstanceId}`
}

/** One slice, or a session's N (up --count N): "2 x 1g.35gb GI 5,6". */
function slicesOf(mig: {profile: string; gpuInstanceId: number | null}, ranks: SessionView['ranks']): string {
  if (!ranks) return sliceOf(mig)
  const ids = ranks.map((r) => r.gpuInstanceId)
  // spread over several GPUs: each instance as GPU:GI
  const spread = new Set(ranks.map((r) => r.gpuIndex)).size > 1
  const named = ranks.map((r) => (spread ? `${r.gpuIndex}:${r.gpuInstanceId}` : String(r.gpuInstanceId)))
  return ids.every((id) => id !== null) ? `${ranks.length} x ${mig.profile} GI ${named.join(',')}` : `${ranks.length} x ${mig.profile} (not all created)`
}

function stateOf(s: SessionView): string {
  if (s.instanceMissing) return `${s.phase} (instance gone: crashed)`
  if (s.crashed && s.containerState === 'missing') return `${s.phase} (container gone: crashed)`
  if (s.crashed) return `${s.phase} (process gone: crashed)`
  return s.phase
}
