/**
 * The host side of `verify --distributed`: what runtime-hooks/verify_distributed.py reported from inside a session of
 * several devices (up --count N), checked for shape and against the session's own devices.
 */
import * as z from 'zod'

import type {SessionAccess} from '../client/session-access.js'
import {deviceOfRank} from '../apply/gpu-book.js'
import {ContainerError} from '../core/errors.js'

const rankReport = z.object({
  rank: z.number().int(),
  device: z.string().nullable(),
  uuid: z.string().nullable(),
  mpsPipe: z.string().nullable(),
  deviceCount: z.number().int().nullable(),
  memoryLimitMiB: z.number().int().nullable(),
  allReduce: z.object({bytes: z.number(), ms: z.number(), busGBs: z.number()}).nullable(),
  ddpStepMs: z.number().nullable(),
  ok: z.boolean(),
  error: z.string().nullable(),
})

const distributedReport = z.object({
  ok: z.boolean(),
  error: z.string().nullable(),
  backend: z.enum(['nccl', 'gloo']).nullable(),
  why: z.string().nullable(),
  kind: z.enum(['cuda', 'cpu']).nullable(),
  nccl: z.string().nullable(),
  torch: z.string().nullable(),
  count: z.number().int(),
  ranks: z.array(rankReport),
})

/** `verify --distributed`: each rank's device as the costume gave it, the all-reduce and the DDP step it ran. */
export type VerifyDistributedResult = z.infer<typeof distributedReport> & {
  session: string
  /** every rank reached the device the session recorded for it (its MIG instance, or the GPU) */
  devicesMatch: boolean
}

/** The session's device count; NOT_DISTRIBUTED (exit 2) for a session of one, before anything runs in it. */
export function requireRanks(access: SessionAccess): number {
  const count = access.session.plan.ranks?.count ?? 1
  if (count < 2) {
    throw new ContainerError('NOT_DISTRIBUTED', `session "${access.container.session}" has one device: verify --distributed needs several`, {
      exit: 2,
      fix: ['bring one up with several: gpu-cosplay up GPU --count 2'],
    })
  }
  return count
}

export function verifyDistributed(access: SessionAccess, ran: {exitCode: number; stdout: string; stderr: string}): VerifyDistributedResult {
  const c = access.container
  let parsed: z.infer<typeof distributedReport>
  try {
    parsed = distributedReport.parse(JSON.parse(ran.stdout.trim().split('\n').pop() ?? ''))
  } catch (error) {
    const last = (ran.stderr || ran.stdout).trim().split('\n').pop() ?? ''
    throw new ContainerError('VERIFY_FAILED', `verify_distributed.py in ${c.name} printed no report (exit ${ran.exitCode}): ${last}`, {
      cause: error,
      fix: ['the image may predate verify --distributed: rebuild it (gpu-cosplay build), then bring the session up again'],
    })
  }
  const count = requireRanks(access)
  // each rank's MIG device as the session recorded it (a spread session's first record names the other GPUs' too); an
  // MPS share of this GPU is checked by its costume's name only ('' stands for the GPU, whose UUID the record lacks)
  const recorded = (rank: number) => (rank >= 0 && rank < count ? deviceOfRank(access.session, rank, '') || null : null)
  const devicesMatch = parsed.ranks.length === count && parsed.ranks.every((r) => recorded(r.rank) === null || r.uuid === recorded(r.rank))
  return {session: c.session, ...parsed, devicesMatch, ok: parsed.ok && devicesMatch}
}
