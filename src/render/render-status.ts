import type {HostView, StatusResult} from '../client/read-host-status.js'
import {type BoxStyle, renderBox} from './render-box.js'
import {renderPs} from './render-ps.js'
import {formatDuration} from '../core/duration.js'

/** One box, or several: each box's GPUs and notes under its name, then one session table for all of them. */
export function renderStatusResult(r: StatusResult, style?: BoxStyle): string {
  if (!('hosts' in r)) return renderStatus(r, style)
  const lines = r.hosts.flatMap((h) => [`== ${h.host}`, ...renderBox(h, style), ...noteLines(h), ''])
  lines.push(renderPs(r.hosts.flatMap((h) => h.sessions.map((s) => ({host: h.host, ...s})))))
  return lines.join('\n')
}

/** the box picture (each GPU's memory slices and who holds them), the session table, then the notes */
export function renderStatus(s: HostView, style?: BoxStyle): string {
  const notes = noteLines(s)
  return [...renderBox(s, style), renderPs(s.sessions), ...(notes.length > 0 ? ['', ...notes] : [])].join('\n')
}

/**
 * what is wrong or worth knowing beyond the GPUs: Docker unreachable, orphan containers, files in the state folder
 * that were not trusted, an unshared state folder
 */
function noteLines(s: HostView): string[] {
  return [
    ...s.gpus.flatMap((g) => g.orphanInstances.map((id) => `ORPHAN GPU ${g.index} GI ${id} (? on the strip): no gpu-cosplay session owns it`)),
    ...(s.containers.reachable ? [] : [`containers: Docker not reachable (${s.containers.reason})`]),
    ...s.containers.orphans.map(
      (c) => `ORPHAN container ${c.name} (${c.state}): session ${c.session} has no record; remove it with docker rm -f ${c.id.slice(0, 12)}`,
    ),
    ...(s.refusedFiles ?? []).map((f) => `REFUSED ${f.message}; whoever planted it may want to redirect gpu-cosplay: mv ${f.file} ${f.file}.bad`),
    ...(s.sharedStateDir ? [] : [`note: state is kept in ${s.stateDir}, not shared with other users`]),
    ...(s.idle ?? []).map((i) => `IDLE ${i.name} (${i.owner}): unused for ${formatDuration(i.idleMs)}, ended in ${formatDuration(i.reclaimInMs)} unless used`),
    ...(s.queue ?? []).map((q) => `WAITING #${q.position} ${q.user}: ${q.want} (since ${q.enqueuedAt})`),
  ]
}
