import {LocalExecutor} from '../../../src/core/local-executor.js'

const run = (argv: string[], options = {}) => new LocalExecutor().run(argv, options)

describe('LocalExecutor', () => {
  it('returns a non-zero exit with both outputs instead of throwing', async () => {
    expect(await run(['sh', '-c', 'echo out; echo err >&2; exit 3'])).toEqual({exitCode: 3, stdout: 'out', stderr: 'err', timedOut: false})
  })

  it('passes input on stdin, and the environment on top of ours', async () => {
    const result = await run(['sh', '-c', 'cat; printf %s "$GREETING"'], {input: 'quit\n', env: {GREETING: ' hi'}})
    expect(result).toEqual({exitCode: 0, stdout: 'quit\n hi', stderr: '', timedOut: false})
  })

  it('kills a process that runs past its timeout and says so (exit 124)', async () => {
    const result = await run(['sleep', '30'], {timeoutMs: 200})
    expect([result.exitCode, result.timedOut]).toEqual([124, true])
  })

  it('throws for a program that cannot be started (a missing one must not look like exit 127)', async () => {
    await expect(run(['/nonexistent/nvidia-smi', '-q'], {timeoutMs: 60_000})).rejects.toMatchObject({code: 'ENOENT'})
  })

  it('a signal from someone else is a failure, not a timeout', async () => {
    const result = await run(['sh', '-c', 'kill -TERM $$'], {timeoutMs: 60_000})
    expect([result.exitCode, result.timedOut]).toEqual([1, false])
  })
})
