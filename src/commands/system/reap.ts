import type {ReapResult} from '../../apply/reap.js'
import {formatDuration} from '../../core/duration.js'
import {BaseCommand, escapeControl} from '../support/base-command.js'

export type SystemReapResult = ReapResult

export default class SystemReap extends BaseCommand {
  static summary = 'End the sessions whose time is up (what the reaper timer runs)'
  static description = `One pass of the reaper: a session within its warning lead (ten minutes before its TTL ends, or a fifth of a shorter lifetime) has its users told, in their ssh terminals and at their next login; one past its end is ended exactly as down ends it. With idle reclaim on (system install --idle-reclaim), a session whose slice ran no compute process of its own and that saw no ssh login for that long is warned, then ended, the same way.

system install runs it as root every 30 s (systemd) or every minute (cron). On an installed box only root may run it; in a sandbox of one's own (GPU_COSPLAY_STATE_DIR) anyone may.`
  static examples = ['sudo <%= config.bin %> system reap', '<%= config.bin %> system reap --json']

  async run(): Promise<SystemReapResult> {
    await this.parse(SystemReap)
    const [{assertMayReap, reapBox}, {applyContext}] = await Promise.all([import('../../system/reap-box.js'), import('../support/apply-context.js')])
    assertMayReap()
    const result = await reapBox(async () => (await applyContext({mutates: true})).deps)
    if (!this.jsonEnabled()) this.log(renderReap(result))
    return result
  }
}

export function renderReap(r: SystemReapResult): string {
  const lines = r.actions.map((a) =>
    a.action === 'warned'
      ? `warned ${escapeControl(a.name)} (${escapeControl(a.owner)}): ends in ${formatDuration(a.inMs ?? 0)} (${a.reason === 'ttl' ? 'TTL' : 'idle'})`
      : `ended ${escapeControl(a.name)} (${escapeControl(a.owner)}): ${a.reason === 'ttl' ? 'its TTL ran out' : 'idle'}`,
  )
  return [...(lines.length > 0 ? lines : ['Nothing to reap.']), ...r.notes.map((n) => `note: ${escapeControl(n)}`)].join('\n')
}
