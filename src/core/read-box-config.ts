/** Reads and checks the box's configuration: a YAML parser and a schema, loaded only where a box is installed. */
import {load} from 'js-yaml'
import * as z from 'zod'

import {BOX_CONFIG_FILE, type BoxConfig} from './box-config.js'
import {durationMs} from './duration.js'
import {byteSizeOf} from './units.js'
import {readTextIfExists, UnsafeFileError} from './json-file.js'

const absolutePath = z.string().regex(/^\/[^\0\n]*$/, 'an absolute path')
const duration = z
  .string()
  .refine((text) => durationMs(text) !== null, 'a duration such as 90s, 30m, 8h or 1h30m')
  .nullable()
  .optional()
const limit = z.number().int().nonnegative().nullable().optional()
const quotaLimits = z.strictObject({sessions: limit, slices: limit})
const name = z.string().regex(/^[a-z_][a-z0-9_.-]{0,31}\$?$/, 'a user or group name')
const size = z
  .string()
  .refine((text) => (byteSizeOf(text) ?? 0) > 0, 'a size such as 512m, 16g')
  .nullable()
  .optional()

const BoxConfigSchema = z.strictObject({
  version: z.literal(1),
  /** members may use the engine */
  group: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/),
  stateDir: absolutePath,
  nvidiaSmi: absolutePath,
  mpsControl: absolutePath.nullable(),
  /** the root-owned entry point the sudoers rule names */
  engine: absolutePath,
  /** `up --sudo` may give the session user sudo in the container (and with it root over their mounts) */
  allowContainerSudo: z.boolean(),
  /** fair share: optional, so a configuration written before it is read as it was (no limits) */
  defaultTtl: duration,
  maxTtl: duration,
  idleReclaim: duration,
  quotas: quotaLimits
    .extend({groups: z.record(name, quotaLimits).optional(), users: z.record(name, quotaLimits).optional()})
    .strict()
    .optional(),
  /** a member's container: optional (absent: CONTAINER_LIMIT_DEFAULTS), null for no limit */
  containerMemory: size,
  containerPids: z.number().int().positive().nullable().optional(),
  shmSizeMax: size,
})

export type BoxConfigRead = {ok: true; config: BoxConfig} | {ok: false; why: string} | null

/**
 * The installation's configuration: null when the box has none, else the config or why it cannot be trusted
 * (not a regular root-owned file that only root can write, or not valid).
 */
export function readBoxConfig(file: string = BOX_CONFIG_FILE): BoxConfigRead {
  let text: string | null
  try {
    text = readTextIfExists(file, {owner: 0, ownerWritesOnly: true})
  } catch (error) {
    return {ok: false, why: error instanceof UnsafeFileError ? error.message : `${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`}
  }
  if (text === null) return null
  let raw: unknown
  try {
    raw = load(text)
  } catch (error) {
    return {ok: false, why: `${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}`}
  }
  const parsed = BoxConfigSchema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    return {ok: false, why: `${file}: field "${issue.path.map(String).join('.')}": ${issue.message}`}
  }
  return {ok: true, config: parsed.data}
}

// the schema and the type say the same thing
const sameShape: (c: z.infer<typeof BoxConfigSchema>) => BoxConfig = (c) => c
void sameShape
