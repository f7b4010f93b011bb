import fs from 'node:fs'
import path from 'node:path'

import {InputError} from '../core/errors.js'

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/

/** Session names double as container names, so they follow Docker's rules. */
export function assertSessionName(name: string): void {
  if (!NAME.test(name)) {
    throw new InputError('BAD_SESSION_NAME', `"${name}" is not a usable session name`, {
      fix: ['use letters, digits, "_", "." or "-", starting with a letter or digit, at most 63 characters'],
    })
  }
}

function namePath(stateDir: string, name: string): string {
  return path.join(stateDir, 'sessions', `${name}.json`)
}

/**
 * Claims a name for the whole box with an exclusive create, so two concurrent `up`s on different GPUs
 * cannot both take it. The GPU book stays the source of truth for what the session did.
 */
export function reserveName(stateDir: string, name: string, claim: {gpuUuid: string; pid: number; hostname: string}): boolean {
  try {
    fs.writeFileSync(namePath(stateDir, name), `${JSON.stringify({version: 1, name, ...claim})}\n`, {flag: 'wx', mode: 0o666})
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
}

export function releaseName(stateDir: string, name: string): void {
  fs.rmSync(namePath(stateDir, name), {force: true})
}

export type NameClaim = {name: string; gpuUuid: string; pid: number; hostname: string}

export function readClaims(stateDir: string): NameClaim[] {
  const dir = path.join(stateDir, 'sessions')
  const claims: NameClaim[] = []
  for (const file of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!file.endsWith('.json')) continue
    try {
      claims.push(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as NameClaim)
    } catch {
      // A claim is a hint; a damaged one is the same as none (the book holds the truth).
    }
  }
  return claims
}

/** The first free `<user>-<target>`, `<user>-<target>-2`, ... */
export function reserveAutoName(stateDir: string, base: string, claim: {gpuUuid: string; pid: number; hostname: string}): string {
  const clean =
    base
      .replace(/[^a-zA-Z0-9_.-]+/g, '-')
      .replace(/^[^a-zA-Z0-9]+/, '')
      .slice(0, 56) || 'session'
  for (let n = 1; n < 1000; n++) {
    const name = n === 1 ? clean : `${clean}-${n}`
    if (reserveName(stateDir, name, claim)) return name
  }
  throw new InputError('NO_FREE_NAME', `no free session name starting with ${clean}`, {fix: ['pass --name NAME']})
}
