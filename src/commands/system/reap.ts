import type {ReapResult} from '../../client/reap-sessions.js'
import {renderReap} from '../../render/render-reap.js'
import {requireRootOnSharedBox} from '../../core/call-context.js'
import {BaseCommand} from '../../shell/base-command.js'

export default class SystemReap extends BaseCommand {
  static summary = 'End the sessions whose time is up (what the reaper timer runs)'
  static description = `One pass of the reaper: a session within its warning lead (ten minutes before its TTL ends, or a fifth of a shorter lifetime) has its users told, in their ssh terminals and at their next login; one past its end is ended exactly as down ends it. With idle reclaim on (system install --idle-reclaim), a session whose slice ran no compute process of its own and that saw no ssh login for that long is warned, then ended, the same way.

system install runs it as root every 30 s (systemd) or every minute (cron). On an installed box only root may run it; in a sandbox of one's own (GPU_COSPLAY_STATE_DIR) anyone may.`
  static examples = ['sudo <%= config.bin %> system reap', '<%= config.bin %> system reap --json']

  async run(): Promise<ReapResult> {
    await this.parse(SystemReap)
    const call = await this.callContext()
    requireRootOnSharedBox(call, 'system reap', 'ends anyone’s session (the reaper timer runs it)')
    const result = await (await import('../../client/reap-sessions.js')).reapSessions(call)
    if (!this.jsonEnabled()) this.log(renderReap(result))
    return result
  }
}
