import {Args, Flags, ux} from '@oclif/core'

import type {ClosedSession} from '../apply/tear-down.js'
import {InputError} from '../core/errors.js'
import {escapeControl} from '../core/failure.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {renderDown} from '../render/render-down.js'

export type DownResult = {closed: ClosedSession[]}

export default class Down extends BaseCommand {
  static summary = 'End sessions and put the GPU back as it was found'
  static description = `Removes the session's container, destroys exactly its compute and GPU instance (by ID, never others'), and leaves its leases of the GPU-wide settings; the last session on a GPU restores the values that were in force before the first one started (and turns MIG mode off again if gpu-cosplay turned it on and no instance remains).

A GPU-wide lease hold (\`lease:HOLDER\` in \`ps\`) ends like \`lease release\`; \`--all\` ends your holds too. Only the owner (or root) can end a session. A name given twice is ended once.`
  static examples = ['<%= config.bin %> down alice-rtx_3090', '<%= config.bin %> down a b c', '<%= config.bin %> down --all']
  static strict = false
  static args = {name: Args.string({description: 'session name(s); see gpu-cosplay ps'})}
  static flags = {all: Flags.boolean({description: 'end every session you own (all sessions, as root)'}), ...hostFlag}

  async run(): Promise<DownResult> {
    const {argv, flags} = await this.parse(Down)
    const remote = await this.forwardToHost(flags.host, (r: DownResult) => renderDown(r.closed))
    if (remote) return remote.result
    const names = argv as string[]
    if (names.length === 0 && !flags.all)
      throw new InputError('NO_SESSION_GIVEN', 'name the sessions to end, or pass --all', {fix: ['gpu-cosplay ps lists them']})
    if (names.length > 0 && flags.all) throw new InputError('BAD_USAGE', 'give session names or --all, not both')
    const [{applyContext}, {tearDown}, {listSessions}] = await Promise.all([
      import('../client/apply-context.js'),
      import('../apply/tear-down.js'),
      import('../apply/book-store.js'),
    ])
    const ctx = await applyContext({mutates: true})
    const chosen = flags.all
      ? listSessions(ctx.stateDir.dir)
          .filter((l) => ctx.isRoot || l.session.owner.uid === ctx.owner.uid)
          .map((l) => l.session.name)
      : names
    if (!this.jsonEnabled() && chosen.length > 0) ux.action.start(`Ending ${escapeControl(chosen.join(', '))}`)
    try {
      const closed = await tearDown(chosen, {uid: ctx.owner.uid, isRoot: ctx.isRoot}, ctx.deps)
      if (!this.jsonEnabled()) {
        if (chosen.length > 0) ux.action.stop('done')
        this.log(renderDown(closed))
      }
      return {closed}
    } catch (error) {
      if (!this.jsonEnabled() && chosen.length > 0) ux.action.stop('failed')
      throw error
    }
  }
}
