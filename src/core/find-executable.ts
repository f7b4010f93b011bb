import {accessSync, constants, statSync} from 'node:fs'
import {delimiter, isAbsolute, join, resolve} from 'node:path'

/** Where a program would be run from: a path is checked as it is, a bare name is looked up on PATH. */
export function findExecutable(program: string, env: Readonly<Record<string, string | undefined>>): string | null {
  const candidates = program.includes('/')
    ? [program]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, program))
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return isAbsolute(candidate) ? candidate : resolve(candidate)
    } catch {
      // not here
    }
  }
  return null
}
