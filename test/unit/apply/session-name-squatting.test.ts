/**
 * Issue 27: a member may not take a session name that starts with another user's name and a dash (bob's `alice-x`
 * would pass for one of alice's, whose own sessions are named `alice-<target>`); their own prefix and root are fine.
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {bringUp} from '../../../src/apply/bring-up.js'
import {listSessions} from '../../../src/apply/book-store.js'
import {assertNameNotReserved, readClaims} from '../../../src/apply/session-names.js'
import {userIdOf} from '../../../src/core/user-groups.js'
import {cleanupTemps} from '../../cli/support/run-cli.js'
import {target} from '../plan/catalog-for-tests.js'
import {ALICE, BOB, gpuPicture, simBox, upRequest} from './sim-deps.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const dir = mkdtempSync(join(tmpdir(), 'gc-names-'))
afterAll(() => rmSync(dir, {recursive: true, force: true}))
const passwd = join(dir, 'passwd')
writeFileSync(
  passwd,
  [
    'root:x:0:0:root:/root:/bin/bash',
    'alice:x:1001:1001::/home/alice:/bin/bash',
    'bob:x:1002:1002::/home/bob:/bin/bash',
    'ml-ops:x:1003:1003::/home/ml-ops:/bin/bash',
    '',
  ].join('\n'),
)
const users = (name: string) => userIdOf(name, passwd)
const bob = {...BOB, isRoot: false}

describe('session names that pass for another user’s', () => {
  it('reads a user id from a passwd file', () => {
    expect([users('alice'), users('ml-ops'), users('carol'), users('')]).toEqual([1001, 1003, null, null])
  })

  it.each([['alice-x'], ['alice-3090-2'], ['root-x'], ['ml-ops-run'], ['alice-'], ['ALICE-x']])('bob may not take %s: NAME_RESERVED, exit 4', (name) => {
    expect(() => assertNameNotReserved(name, bob, users)).toThrow(expect.objectContaining({code: 'NAME_RESERVED', exit: 4}))
  })

  it.each([['bob-x'], ['bob-alice-x'], ['alice'], ['carol-x'], ['alicex-1'], ['ml-x'], ['x-alice']])('bob may take %s', (name) => {
    expect(() => assertNameNotReserved(name, bob, users)).not.toThrow()
  })

  it('root may take any of them', () => {
    expect(() => assertNameNotReserved('alice-x', {uid: 0, user: 'root', isRoot: true}, users)).not.toThrow()
  })

  it('a member’s up --name alice-x is refused before anything is claimed or changed', async () => {
    const box = simBox()
    const picture = gpuPicture(box.sim)
    const up = bringUp(upRequest(BOB, {target: target('1650'), name: 'alice-x'}), {...box.deps, isRoot: false, userIdOf: users})
    await expect(up).rejects.toMatchObject({code: 'NAME_RESERVED', exit: 4})
    expect(readClaims(box.stateDir, SANDBOX)).toEqual([])
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(gpuPicture(box.sim)).toEqual(picture)
    // alice herself may
    const mine = await bringUp(upRequest(ALICE, {target: target('1650'), name: 'alice-x'}), {...box.deps, isRoot: false, userIdOf: users})
    expect(mine.name).toBe('alice-x')
  })
})
