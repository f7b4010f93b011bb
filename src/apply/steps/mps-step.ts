import {createHash} from 'node:crypto'
import path from 'node:path'

import type {Executor} from '../../core/executor.js'
import type {StatePolicy} from '../../core/state-policy.js'
import {LocalExecutor} from '../../core/local-executor.js'
import {mpsDirsOf, mpsHolderDir} from '../../core/state-layout.js'
import type {MpsControl, MpsDirectories, MpsRunAs} from '../../host/mps.js'
import type {MpsShaping} from '../../plan/types.js'
import {isLeaseSession, slotOfRank} from '../gpu-book.js'
import {removeTreeAsOwner} from '../remove-tree-as-owner.js'
import {ensureHolderDir, ensurePrivateDir, ensureUserDir} from '../state-dir.js'
import type {Json, PlannedStep, StepImpl} from './step.js'

/**
 * A session's MPS control daemon on the host (`up --no-container`; with a container the entrypoint runs
 * it inside). Its limits shape the session inside its own slice: the SMs its clients may use, and a hard
 * cap on device memory for any CUDA program. Params hold everything undo needs (the pipe directory), so
 * any process can stop a daemon that a killed one started.
 */
export type StartMpsParams = {
  readonly pipeDirectory: string
  readonly logDirectory: string
  readonly activeThreadPercentage: number
  readonly pinnedMemLimitMiB: number
  /** the daemon's owner when we run as root; null: as this process */
  readonly runAs: MpsRunAs | null
  /** up --count N: the rank whose device the daemon serves (absent: the session's one) */
  readonly rank?: number
}

/** The MPS control funnel, made when a step first needs it. */
export type MpsFactory = () => MpsControl

/** `executor` runs the removal of a member's folder as the member (remove-tree-as-owner.ts). */
export function startMpsStep(mps: MpsFactory, executor: Executor = new LocalExecutor()): StepImpl {
  return {
    kind: 'start-mps',
    describe: (params) =>
      `start an MPS control daemon${params.rank ? ` for rank ${params.rank}` : ''}: ${params.activeThreadPercentage}% of the SMs, ${params.pinnedMemLimitMiB} MiB pinned`,

    async readPrior() {
      return {}
    },

    async apply(ctx, params) {
      const p = params as StartMpsParams
      const dirs = dirsOf(p)
      const owner = p.runAs ?? {uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0}
      ensurePrivateDir(path.dirname(dirs.pipe), owner, ctx.trust)
      ensurePrivateDir(dirs.pipe, owner, ctx.trust)
      ensurePrivateDir(dirs.log, owner, ctx.trust)
      // One daemon per MIG device: clients see only their rank's slice (on a GPU without MIG, the GPU itself)
      const slot = isLeaseSession(ctx.session) ? null : slotOfRank(ctx.session, p.rank ?? 0)
      const device = slot?.uuid ?? ctx.book.gpu.uuid
      const control = mps()
      await control.startDaemon(dirs, device, p.runAs)
      try {
        await control.send(
          dirs,
          device,
          [`set_default_active_thread_percentage ${p.activeThreadPercentage}`, `set_default_device_pinned_mem_limit 0 ${p.pinnedMemLimitMiB}M`],
          p.runAs,
        )
      } catch (error) {
        // A half-configured daemon would serve clients without limits: stop it before failing.
        await control.quit(dirs, p.runAs).catch(() => undefined)
        throw error
      }
      return {device}
    },

    async undo(ctx, entry) {
      const p = entry.params as StartMpsParams
      await mps().quit(dirsOf(p), p.runAs)
      // the member's folder, removed with their rights when we are root (a link they swap in leads nowhere of root's)
      const left = await removeTreeAsOwner(path.dirname(p.pipeDirectory), executor)
      if (left) ctx.notes.push(left)
    },
  }
}

function dirsOf(p: StartMpsParams): MpsDirectories {
  return {pipe: p.pipeDirectory, log: p.logDirectory}
}

/**
 * The planned step for a session: its pipe directory sits in the owner's private folder, named by a short
 * hash of the session (a unix socket path must stay under 108 bytes).
 */
export function mpsStepFor(
  impl: StepImpl,
  shaping: MpsShaping,
  stateDir: string,
  trust: StatePolicy,
  session: string,
  owner: {uid: number; gid: number},
  runAsOwner: boolean,
  rank = 0,
): PlannedStep {
  const base = mpsHolderDir(ensureUserDir(stateDir, owner, trust))
  ensureHolderDir(base, owner, trust)
  // rank 0 keeps the folder a session of one device has; a name cannot hold '#', so no session's is another's rank's
  const {pipeDirectory, logDirectory} = mpsDirsOf(
    base,
    createHash('sha256')
      .update(rank === 0 ? session : `${session}#${rank}`)
      .digest('hex')
      .slice(0, 10),
  )
  const params: StartMpsParams & Json = {
    pipeDirectory,
    logDirectory,
    activeThreadPercentage: shaping.activeThreadPercentage,
    pinnedMemLimitMiB: shaping.pinnedMemLimitMiB,
    runAs: runAsOwner ? owner : null,
    ...(rank > 0 ? {rank} : {}),
  }
  return {impl, params}
}
