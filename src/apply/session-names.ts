import fs from 'node:fs'
import path from 'node:path'

import {InputError, StateError} from '../core/errors.js'
import {isUnsafeFileError, readTextIfExists, type RefusedFile, refusedFile} from '../core/json-file.js'
import {startTicksOf} from '../core/recorded-process.js'
import type {StatePolicy} from '../core/state-policy.js'
import {userIdOf} from '../core/user-groups.js'
import {claimPath, claimsDir} from '../core/state-layout.js'

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/

/** Session names double as container names, so they follow Docker's rules. */
export function assertSessionName(name: string): void {
  if (!NAME.test(name)) {
    throw new InputError('BAD_SESSION_NAME', `"${name}" is not a usable session name`, {
      fix: ['use letters, digits, "_", "." or "-", starting with a letter or digit, at most 63 characters'],
    })
  }
}

/** Who asks for a name: root may take any. */
export type NameCaller = {readonly uid: number; readonly user: string; readonly isRoot: boolean}

/** A user's id by name; null when there is no such user. */
export type UserLookup = (user: string) => number | null

/**
 * A member may not take a name that starts with another user's name and a dash: everyone's own sessions are named
 * `<user>-<target>` by default, so bob's `alice-x` would pass for one of alice's (in ps, in a teammate's `down`, in
 * the container's name). Every dash counts, so a user whose own name has one (`ml-ops`) is covered too. Root may.
 */
export function assertNameNotReserved(name: string, caller: NameCaller, uidOf: UserLookup = userIdOf): void {
  if (caller.isRoot) return
  for (let at = name.indexOf('-'); at > 0; at = name.indexOf('-', at + 1)) {
    const prefix = name.slice(0, at)
    // user names are lower case; ALICE-x passes for alice's as well
    for (const user of new Set([prefix, prefix.toLowerCase()])) {
      const uid = user === caller.user ? caller.uid : uidOf(user)
      if (uid === null || uid === caller.uid) continue
      throw new StateError('NAME_RESERVED', `session names starting with "${user}-" are ${user}'s`, {
        exit: 4,
        fix: [`pick another --name, e.g. ${caller.user}-${name.slice(at + 1) || 'session'}`, 'or leave --name out: the session is named after you'],
      })
    }
  }
}

/**
 * Claims a name for the whole box with an exclusive create, so two concurrent `up`s on different GPUs
 * cannot both take it. The GPU book stays the source of truth for what the session did.
 */
export function reserveName(stateDir: string, name: string, claim: {gpuUuid: string | null; pid: number; hostname: string}): boolean {
  const file = claimPath(stateDir, name)
  const {O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW} = fs.constants
  let fd: number
  try {
    // O_EXCL: anything already there, a symlink included, is someone's claim and is never opened
    fd = fs.openSync(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
  try {
    fs.fchmodSync(fd, 0o644) // only ever created and removed (which the folder's mode governs), never rewritten
    fs.writeSync(fd, `${JSON.stringify({version: 1, name, ...claim, startTicks: startTicksOf(claim.pid)})}\n`)
  } catch (error) {
    fs.closeSync(fd)
    fs.rmSync(file, {force: true})
    throw error
  }
  fs.closeSync(fd)
  return true
}

export function releaseName(stateDir: string, name: string): void {
  fs.rmSync(claimPath(stateDir, name), {force: true})
}

/**
 * who claimed a name: startTicks in claims written since it was recorded (see core/recorded-process.ts); gpuUuid is
 * null for an up that may spread over several GPUs (where it goes is known only once it is planned)
 */
export type NameClaim = {name: string; gpuUuid: string | null; pid: number; hostname: string; startTicks?: string | null}

export function readClaims(stateDir: string, trust: StatePolicy): NameClaim[] {
  return scanClaims(stateDir, trust).claims
}

/**
 * The name claims, and what was skipped rather than followed: a symlink, not a regular file, or (engine) a file
 * root did not write is never read.
 */
export function scanClaims(stateDir: string, trust: StatePolicy): {claims: NameClaim[]; refused: RefusedFile[]} {
  const dir = claimsDir(stateDir)
  const claims: NameClaim[] = []
  const refused: RefusedFile[] = []
  const owner = trust.trustedOwner
  for (const file of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!file.endsWith('.json') || file.startsWith('.')) continue
    try {
      const text = readTextIfExists(path.join(dir, file), {owner})
      if (text !== null) claims.push(JSON.parse(text) as NameClaim)
    } catch (error) {
      if (isUnsafeFileError(error)) refused.push(refusedFile(error))
      // A claim is a hint; a damaged one is the same as none (the book holds the truth).
    }
  }
  return {claims, refused}
}

/** A base made a usable name: what a session without --name is called (before a `-2`, `-3` when taken). */
function cleanBase(base: string): string {
  return (
    base
      .replace(/[^a-zA-Z0-9_.-]+/g, '-')
      .replace(/^[^a-zA-Z0-9]+/, '')
      .slice(0, 56) || 'session'
  )
}

/** The name an `up` without --name gets when it is free: `<user>-<target>` (the queue shows it for such a request). */
export function defaultSessionName(user: string, targetKey: string): string {
  return cleanBase(`${user}-${targetKey}`)
}

/** The first free `<user>-<target>`, `<user>-<target>-2`, ... */
export function reserveAutoName(stateDir: string, base: string, claim: {gpuUuid: string | null; pid: number; hostname: string}): string {
  const clean = cleanBase(base)
  for (let n = 1; n < 1000; n++) {
    const name = n === 1 ? clean : `${clean}-${n}`
    if (reserveName(stateDir, name, claim)) return name
  }
  throw new InputError('NO_FREE_NAME', `no free session name starting with ${clean}`, {fix: ['pass --name NAME']})
}
