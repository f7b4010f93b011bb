/**
 * What a member may ask the root engine, as data: one request per call, each field parsed and bounded here, and the
 * frames that go back and forth while it runs. The engine reads the request on stdin (never argv: `ps` shows argv
 * to everyone, and --env values travel in it), so the same bytes reach it through `gpu-cosplay` or a hand-written
 * `sudo -n ENGINE`: this schema is the engine's whole surface. Who asks is not in it: sudo names the caller.
 */
import * as z from 'zod'

import {COUNT_MAX} from '../core/names.js'

export const ENGINE_PROTOCOL = 1
/** the request line, and each input frame after it */
export const MAX_REQUEST_BYTES = 1024 * 1024
export const MAX_FRAME_BYTES = 256 * 1024
/** stdin data is sent in chunks of at most this many bytes (base64 makes a frame ~4/3 of it) */
export const STDIN_CHUNK_BYTES = 64 * 1024

const MAX_DURATION_MS = 366 * 86_400_000
const text = (max: number) => z.string().max(max)
/** what a session may be called: Docker's container-name rules (see apply/session-names.ts) */
const sessionName = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/, 'not a session name')
/** a session, or a lease hold (`lease:HOLDER`) that down ends */
const sessionOrLease = z.string().regex(/^(lease:)?[a-zA-Z0-9][a-zA-Z0-9_.@:-]{0,126}$/, 'not a session name')
/** an absolute path as the client resolved it: no NUL, no newline, no `.` or `..` segment, no empty segment */
const absolutePath = z
  .string()
  .max(4096)
  .refine(
    (p) =>
      p === '/' ||
      (/^\/[^\0\n\r]*[^/]$/.test(p) &&
        p
          .split('/')
          .slice(1)
          .every((s) => s !== '' && s !== '.' && s !== '..')),
    'not an absolute, normalised path',
  )
const volumeName = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,254}$/, 'not a volume name')
const durationMs = z.number().int().min(1).max(MAX_DURATION_MS)
const publicKeyLine = z
  .string()
  .max(16_384)
  .regex(/^(ssh-|ecdsa-|sk-)[A-Za-z0-9@.-]+ [A-Za-z0-9+/]+=*( [^\n\r]*)?$/, 'not an ssh public key line')

export const containerRequestSchema = z.strictObject({
  /** null: the box's cosplay image */
  image: text(512).nullable(),
  workspace: absolutePath,
  /** a folder or file (absolute), or, outside a shared box, a named Docker volume (which the engine refuses a member) */
  volumes: z.array(z.strictObject({source: absolutePath.or(volumeName), target: absolutePath, readOnly: z.boolean()})).max(32),
  env: z.array(z.strictObject({name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'not a variable name'), value: text(65_536)})).max(256),
  sshPort: z.number().int().min(1).max(65_535).nullable(),
  sshBind: text(64),
  shmSizeBytes: z
    .number()
    .int()
    .min(1)
    .max(2 ** 50)
    .nullable(),
  sudo: z.boolean(),
  /** the member's own keys, read and made on their side: the container accepts them (besides the engine's own) */
  publicKeys: z.array(publicKeyLine).max(8),
})

/** one operation: its name and fields, with the protocol version every request carries */
function op<Name extends string, Shape extends z.ZodRawShape>(name: Name, shape: Shape) {
  return z.strictObject({v: z.literal(ENGINE_PROTOCOL), op: z.literal(name), ...shape})
}

export const upRequestSchema = op('up', {
  target: text(128).min(1),
  /** null: up --count N goes where the planner places the ranks (over several GPUs where needed) */
  hostGpu: z.number().int().min(0).max(255).nullable(),
  match: z.enum(['fp32', 'bf16', 'bandwidth', 'balanced']),
  /** what the plan matches: what the target card measures (absent: that), or its datasheet */
  basis: z.enum(['measured', 'datasheet']).optional(),
  /** up --count N: N devices of the target in the session (absent: one) */
  count: z.number().int().min(2).max(COUNT_MAX).optional(),
  name: sessionName.nullable(),
  strict: z.boolean(),
  noMps: z.boolean(),
  lockClock: z.boolean(),
  capPower: z.boolean(),
  ttlMs: durationMs.nullable(),
  wait: z.boolean(),
  timeoutMs: durationMs.nullable(),
  container: containerRequestSchema.nullable(),
})

export const engineRequestSchema = z.discriminatedUnion('op', [
  op('hello', {}),
  upRequestSchema,
  op('down', {names: z.array(sessionOrLease).max(64), all: z.boolean()}),
  op('extend', {name: sessionName, byMs: durationMs}),
  op('status', {orphans: z.boolean()}),
  op('queue', {}),
  op('session', {name: sessionName.nullable()}),
  op('authorize-key', {name: sessionName.nullable(), publicKey: publicKeyLine}),
  op('exec', {
    name: sessionName.nullable(),
    argv: z.array(text(131_072)).min(1).max(4096),
    tty: z.boolean(),
    rows: z.number().int().min(1).max(1000).nullable(),
    cols: z.number().int().min(1).max(1000).nullable(),
  }),
  op('verify', {name: sessionName.nullable(), perf: z.boolean(), cpu: z.boolean(), distributed: z.boolean().optional()}),
  op('recover', {}),
  op('doctor', {}),
])

export type EngineRequest = z.infer<typeof engineRequestSchema>
export type EngineOp = EngineRequest['op']
export type RequestOf<Op extends EngineOp> = Omit<Extract<EngineRequest, {op: Op}>, 'v'>
export type ContainerRequest = z.infer<typeof containerRequestSchema>

/** engine -> client, one JSON object a line */
export type EngineFrame =
  | {t: 'say' | 'start' | 'stop'; text: string}
  | {t: 'stdout' | 'stderr'; data: string}
  | {t: 'result'; value: unknown}
  | {t: 'error'; error: {code: string; message: string; fix: string[]; exit: number}}

/** client -> engine after the request line */
export const inputFrameSchema = z.discriminatedUnion('t', [
  z.strictObject({t: z.literal('stdin'), data: z.string().max(MAX_FRAME_BYTES)}),
  z.strictObject({t: z.literal('stdin-end')}),
  z.strictObject({t: z.literal('resize'), rows: z.number().int().min(1).max(1000), cols: z.number().int().min(1).max(1000)}),
  z.strictObject({t: z.literal('cancel')}),
])

/** The request with the protocol version, as the client sends it. */
export function requestLine<Op extends EngineOp>(request: RequestOf<Op>): string {
  return `${JSON.stringify({v: ENGINE_PROTOCOL, ...request})}\n`
}

/** Why a request is refused before anything runs: one line naming the field (no value echoed: it may be a secret). */
export function describeRequestIssues(error: z.ZodError): string {
  const issue = error.issues[0]
  const where = issue?.path.length ? issue.path.join('.') : 'request'
  return `${where}: ${issue?.message ?? 'invalid'}`
}
