import {firstListing, startEarlyListing, upReadsLocalGpu} from '../../../src/client/first-listing.js'

describe('upReadsLocalGpu: bin/run.js reads the GPUs before oclif loads only for a local up', () => {
  it.each([
    [['up', '3090'], {}, true],
    [['up', '3090', '--no-container', '--name', 'x'], {}, true],
    [['plan', '3090'], {}, false],
    [['up', '3090', '--host', 'box'], {}, false],
    [['up', '3090', '--host=box'], {}, false],
    [['up', '3090'], {GPU_COSPLAY_HOST: 'box'}, false],
    [['up', '3090'], {GPU_COSPLAY_HOST: '  '}, true],
    [['up', '--help'], {}, false],
    [['up', '-h'], {}, false],
  ])('%j with %j: %s', (argv, env, expected) => {
    expect(upReadsLocalGpu(argv, env)).toBe(expected)
  })
})

describe('firstListing', () => {
  // nvidia-smi that cannot start: the listings fail, which is all these tests need
  const env = {GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi'}

  it('hands up the listing bin/run.js started, once', async () => {
    const early = startEarlyListing(env)
    const taken = firstListing(env)
    expect(taken).toBe(early)
    const next = firstListing(env)
    expect(next).not.toBe(early)
    await expect(taken).rejects.toThrow()
    await expect(next).rejects.toThrow()
  })
})
