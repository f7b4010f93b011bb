import type {Readiness} from '../core/check.js'
import type {InstallResult} from '../system/box-install.js'
import type {BoxStatus} from '../system/box-status.js'

/** The text view of `system install`: what was made or kept, where, and how members join. */
export function renderInstall(r: InstallResult): string {
  const width = Math.max(...r.items.map((i) => i.what.length))
  return [
    ...r.items.map((i) => `  ${i.what.padEnd(width)}  ${i.action.padEnd(9)}  ${i.path}`),
    ...r.notes.map((n) => `note: ${n}`),
    `Members of ${r.config.group} may now use gpu-cosplay: sudo usermod -aG ${r.config.group} USER (they log in again). Check: gpu-cosplay system status`,
  ].join('\n')
}

/** The text view of `system status`: installed or not, and each check. */
export function renderSystemStatus(r: BoxStatus): string {
  if (!r.installed) {
    return 'not installed: every user needs Docker and nvidia-smi rights of their own (safe only among people who trust each other); for a shared box: sudo gpu-cosplay system install --yes'
  }
  const mark: Record<Readiness, string> = {ok: 'OK     ', warn: 'WARN   ', missing: 'MISSING'}
  return [
    r.healthy ? `installed and healthy${r.config ? ` (group ${r.config.group}, state ${r.config.stateDir})` : ''}` : 'installed, but broken:',
    ...r.checks.map((c) => `  ${mark[c.status]} ${c.name}: ${c.detail}${c.fix.length > 0 ? ` (${c.fix.join('; ')})` : ''}`),
  ].join('\n')
}
