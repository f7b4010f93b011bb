/**
 * The reaper with its container side: the notices and login marks of session containers (session-notice.ts) over the
 * Docker runtime, loaded only when a pass has something to do.
 */
import type {BookStoreDeps} from '../apply/book-store.js'
import {type ReapResult, reapSessions} from '../apply/reap.js'
import type {SessionPolicy} from '../apply/session-policy.js'

export type ReaperOptions = {readonly now?: () => number}

/** One reaper pass (`system reap`, the timer's): warns, then ends, what is due. */
export async function reapNow(deps: BookStoreDeps, policy: SessionPolicy, options: ReaperOptions = {}): Promise<ReapResult> {
  const [{DockerRuntime}, {containerLogins, containerNotifier}] = await Promise.all([import('./runtime.js'), import('./session-notice.js')])
  let runtime: InstanceType<typeof DockerRuntime> | null = null
  const docker = () => (runtime ??= new DockerRuntime())
  return reapSessions({
    ...deps,
    policy,
    now: options.now,
    // Docker is reached only for sessions with a container
    notify: async (session, message) => (session.container ? containerNotifier(docker())(session, message) : undefined),
    logins: async (session) => (session.container ? containerLogins(docker(), options.now)(session) : null),
  })
}
