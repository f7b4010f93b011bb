import {join} from 'node:path'

import {readBook} from '../../../src/apply/gpu-book.js'

/** Books an earlier gpu-cosplay wrote (test/fixtures/books/README.md) still read, as what they recorded. */
describe('a book written before per-session MPS shaping', () => {
  const book = readBook(join(process.cwd(), 'test/fixtures/books/before-mps-shaping.json'))!

  it('reads both sessions, journals untouched', () => {
    expect(Object.keys(book.sessions)).toEqual(['old1', 'old2'])
    expect(book.sessions.old1.journal.map((e) => e.kind)).toEqual(['set-persistence', 'enable-mig', 'create-gi', 'create-ci', 'lock-clocks', 'set-power-limit'])
  })

  it('gives each plan what that version did: no MPS, the GPU-wide settings it planned, its VRAM cap in GiB', () => {
    // both locked the clock at 1410 MHz and capped power at 200 W; caps of 16 and 24 GiB (vramCapGB in the file)
    for (const [name, vramCapGiB] of [
      ['old1', 16],
      ['old2', 24],
    ] as const) {
      const session = book.sessions[name]
      if (session.kind === 'lease') throw new Error('an up session expected')
      expect(session.plan.mps).toBeNull()
      expect(session.plan.gpuWide).toMatchObject({clockLock: true, powerLimit: true})
      expect(session.plan.weighed).toEqual([])
      expect(session.plan.vramCapGiB).toBe(vramCapGiB)
    }
  })
})
