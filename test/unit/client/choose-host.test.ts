import {upOnBest} from '../../../src/client/choose-host.js'
import {InputError, StateError} from '../../../src/core/errors.js'
import {rankCandidates} from '../../../src/plan/placement.js'

const weighed = (expected: number) => ({weighed: [{axis: 'fp32' as const, expected, target: 10, errorPct: (expected - 10) * 10}]})
const ranked = rankCandidates([
  {host: 'b', plan: weighed(12), refused: null},
  {host: 'a', plan: weighed(10.2), refused: null},
  {host: 'down', plan: null, refused: {code: 'REMOTE_UNREACHABLE', message: 'cannot reach down'}},
])

describe('upOnBest', () => {
  it('brings the session up on the closest box only', async () => {
    const tried: string[] = []
    const {result, placement} = await upOnBest(
      ranked,
      async (host) => (tried.push(host), `up on ${host}`),
      () => undefined,
    )
    expect([result, tried, placement.host]).toEqual(['up on a', ['a'], 'a'])
    expect(placement.candidates.map((c) => [c.host, c.refused?.code ?? null])).toEqual([
      ['a', null],
      ['b', null],
      ['down', 'REMOTE_UNREACHABLE'],
    ])
  })

  it('goes to the next box when the best was taken meanwhile, and says so', async () => {
    const said: string[] = []
    const {placement} = await upOnBest(
      ranked,
      async (host) => {
        if (host === 'a') throw new StateError('MIG_NO_FREE_SLOT', 'GPU 0 has no free MIG slice')
        return host
      },
      (line) => said.push(line),
    )
    expect(placement.host).toBe('b')
    expect(said).toEqual([expect.stringMatching(/^a was taken meanwhile \(MIG_NO_FREE_SLOT\); trying b/)])
  })

  it('does not try another box after a failure that is not about the box being taken (bad input, Ctrl-C)', async () => {
    for (const failure of [new InputError('BAD_NAME', 'bad'), new StateError('INTERRUPTED', 'interrupted')]) {
      const tried: string[] = []
      const error = await upOnBest(
        ranked,
        async (host) => {
          tried.push(host)
          throw failure
        },
        () => undefined,
      ).catch((e: unknown) => e)
      expect([error, tried]).toEqual([failure, ['a']])
    }
  })

  it('refuses with NO_HOST_FITS (exit 3) naming each box when none can take it', async () => {
    const none = rankCandidates([
      {host: 'x', plan: null, refused: {code: 'GPU_BUSY', message: 'x: GPU 0 is busy'}},
      {host: 'y', plan: null, refused: {code: 'REMOTE_UNREACHABLE', message: 'cannot reach y'}},
    ])
    const error = await upOnBest(
      none,
      async () => 'never',
      () => undefined,
    ).catch((e: unknown) => e)
    expect(error).toMatchObject({code: 'NO_HOST_FITS', exit: 3})
    expect((error as Error).message).toContain('x: GPU 0 is busy; y: cannot reach y')
  })
})
