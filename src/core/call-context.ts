/**
 * Who is asking, as one value: made once where a request enters (the engine's serve path, the CLI's in-process
 * answer, a command that acts here) and passed down to what decides by it. Nothing below an entry point asks the
 * process who it is: a module-level "am I the engine" is invisible at the call site and lets a test pass for the
 * wrong reason (mig-parted's Context is the model).
 */
import {type BoxConfig, ENGINE_ENV} from './box-config.js'
import {StateError} from './errors.js'
import {type InvokingUser, invokingUserOf} from './invoking-user.js'
import {type StatePolicy, statePolicyOf} from './state-policy.js'

type Env = Readonly<Record<string, string | undefined>>

export type CallContext = {
  /** who asked: in the engine the caller sudo names (SUDO_UID), never anything the request says */
  readonly caller: InvokingUser
  /** the box's configuration when this process is the engine (root on an installed box); null: it is not */
  readonly box: BoxConfig | null
  /** the engine acts for a caller who came through the sudoers rule (not for root at a shell) */
  readonly actsForCaller: boolean
  /** a member's own client process on an installed box (what needs root goes to the engine) */
  readonly memberClient: boolean
  /** whose files in the state directory are trusted, and the modes of its shared folders: the engine's or a sandbox's */
  readonly policy: StatePolicy
}

/** A context from its parts; the policy follows from whether this is the engine. */
export function callContext(parts: {caller: InvokingUser; box: BoxConfig | null; actsForCaller: boolean; memberClient?: boolean}): CallContext {
  // actsForCaller is asked for, never defaulted: an engine context that forgot it would pass a member as root
  const actsForCaller = parts.box !== null && parts.actsForCaller
  return {caller: parts.caller, box: parts.box, actsForCaller, memberClient: parts.memberClient ?? false, policy: statePolicyOf(parts.box !== null)}
}

/**
 * This process's context. It is the engine when it runs as root, carries the engine's mark (`caller`: set by the
 * entry point the sudoers rule names, which starts node with `env -i`; `root`: set by bin/run.js for root at a shell of
 * an installed box) and has the box's configuration, read and checked by the entry point that passes it.
 */
export function callContextOf(env: Env, config: BoxConfig | null, uid: number = process.getuid?.() ?? -1): CallContext {
  const mark = env[ENGINE_ENV]
  const engine = uid === 0 && (mark === 'caller' || mark === 'root') && config !== null
  const actsForCaller = engine && mark === 'caller'
  return callContext({
    caller: invokingUserOf(env, actsForCaller, uid),
    box: engine ? config : null,
    actsForCaller,
    memberClient: mark === 'member' && uid !== 0,
  })
}

/**
 * The CLI's context (a command answered in its own process): root at a shell of an installed box reads the box's
 * configuration here (bin/run.js's route checked it and marked the process; the YAML parser loads only then).
 */
export async function callContextHere(env: Env = process.env): Promise<CallContext> {
  const mark = env[ENGINE_ENV]
  if ((process.getuid?.() ?? -1) !== 0 || (mark !== 'caller' && mark !== 'root')) return callContextOf(env, null)
  const {readBoxConfig} = await import('./read-box-config.js')
  const read = readBoxConfig()
  if (!read?.ok) {
    throw new StateError('BOX_CONFIG_UNTRUSTED', `the box's configuration cannot be used: ${read ? read.why : 'it is missing'}`, {
      exit: 4,
      fix: ['ask an admin: sudo gpu-cosplay system install --yes'],
    })
  }
  return callContextOf(env, read.config)
}

/**
 * A command whose effect is the whole box's (the shared default image, GPU-wide settings held for a cluster job) is
 * root's on a shared box: a member reaching the engine for it is refused before anything happens.
 */
export function requireRootOnSharedBox(ctx: CallContext, command: string, why: string): void {
  // a member's own client says so before it asks (the engine, acting for them, again)
  if (ctx.memberClient || (ctx.actsForCaller && !ctx.caller.isRoot)) {
    throw new StateError('ROOT_ONLY', `${command} ${why}: on this shared box only root may run it`, {
      exit: 4,
      fix: [`ask an admin: sudo gpu-cosplay ${command}`],
    })
  }
}
