/** What the engine answers before it serves anything: who runs it, with what arguments, and whether the request parses. */
import {ENGINE_ENV} from '../core/box-config.js'
import {describeRequestIssues, type EngineFrame, type EngineRequest, engineRequestSchema} from '../system/engine-protocol.js'

export type ErrorFrame = Extract<EngineFrame, {t: 'error'}>
export const refusal = (code: string, message: string, exit: number, fix: string[] = []): ErrorFrame => ({t: 'error', error: {code, message, fix, exit}})

/** what to answer before the request is read: the caller, the box, the arguments */
export function refuseToServe(argv: readonly string[], env: NodeJS.ProcessEnv, uid: number): ErrorFrame | null {
  // sudo names the caller in both: a missing SUDO_USER must not leave the caller to a fallback
  if (uid !== 0 || env[ENGINE_ENV] !== 'caller' || !/^\d+$/.test(env.SUDO_UID ?? '') || !env.SUDO_USER) {
    return refusal('NOT_THROUGH_SUDO', 'the gpu-cosplay engine runs only through sudo', 4, ['run gpu-cosplay as yourself: it asks the engine'])
  }
  if (argv.length > 0) {
    return refusal('ENGINE_ARGV', 'the gpu-cosplay engine takes no arguments: it reads one request on stdin', 2, [
      'run gpu-cosplay as yourself: it asks the engine',
    ])
  }
  return null
}

/** The request line, parsed and bounded; a refusal frame when it is not a request this engine serves. */
export function parseRequest(line: string | null): EngineRequest | ErrorFrame {
  if (line === null) return refusal('BAD_REQUEST', 'no request arrived on stdin', 2)
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return refusal('BAD_REQUEST', 'the request is not JSON', 2)
  }
  const parsed = engineRequestSchema.safeParse(json)
  return parsed.success ? parsed.data : refusal('BAD_REQUEST', `the request is not one the engine serves: ${describeRequestIssues(parsed.error)}`, 2)
}
