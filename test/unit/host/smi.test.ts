import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {isCosplayError} from '../../../src/core/errors.js'
import {SmiError} from '../../../src/host/smi-error.js'
import {classifySmiFailure, Smi, smiPathFrom} from '../../../src/host/smi.js'
import {ScriptedExecutor} from '../support/scripted-executor.js'
import {rejected} from '../support/thrown.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

const failureOf = (promise: Promise<unknown>) => rejected(promise, SmiError)

describe('smiPathFrom', () => {
  test('prefers GPU_COSPLAY_NVIDIA_SMI and falls back to PATH lookup', () => {
    expect(smiPathFrom({GPU_COSPLAY_NVIDIA_SMI: '/opt/sim/nvidia-smi'})).toBe('/opt/sim/nvidia-smi')
    expect(smiPathFrom({})).toBe('nvidia-smi')
    expect(smiPathFrom({GPU_COSPLAY_NVIDIA_SMI: ''})).toBe('nvidia-smi')
  })
})

describe('Smi', () => {
  test('read runs the configured path without sudo and returns stdout', async () => {
    const executor = new ScriptedExecutor({stdout: 'table\n'})
    const smi = new Smi(executor, {path: '/sim/nvidia-smi', sudo: true, timeoutMs: 1234})
    await expect(smi.read(['mig', '-lgip'])).resolves.toBe('table\n')
    expect(executor.calls).toEqual([{argv: ['/sim/nvidia-smi', 'mig', '-lgip'], options: {timeoutMs: 1234}}])
  })

  test('mutate prefixes sudo -n only when asked to', async () => {
    const withSudo = new ScriptedExecutor({})
    await new Smi(withSudo, {path: 'nvidia-smi', sudo: true}).mutate(['-i', '0', '-pm', '1'])
    expect(withSudo.calls[0].argv).toEqual(['sudo', '-n', 'nvidia-smi', '-i', '0', '-pm', '1'])

    const withoutSudo = new ScriptedExecutor({})
    await new Smi(withoutSudo, {path: 'nvidia-smi', sudo: false}).mutate(['-i', '0', '-pm', '1'])
    expect(withoutSudo.calls[0].argv).toEqual(['nvidia-smi', '-i', '0', '-pm', '1'])
  })

  test('counts every call, failed ones included', async () => {
    const smi = new Smi(new ScriptedExecutor({exitCode: 6, stdout: 'No GPU instances found: Not Found\n'}), {path: 'nvidia-smi', sudo: false})
    await expect(smi.read(['mig', '-lgi'])).rejects.toThrow()
    await expect(smi.mutate(['mig', '-dgi', '-gi', '7'])).rejects.toThrow()
    expect(smi.callCount).toBe(2)
  })

  test('a failure printed on stdout becomes a typed error naming the command', async () => {
    const stdout = fixture('a100-sxm4-40gb__mig-cgi-19-19-14-9-insufficient-resources.txt')
    const smi = new Smi(new ScriptedExecutor({exitCode: 2, stdout}), {path: '/usr/bin/nvidia-smi', sudo: true})
    const error = await failureOf(smi.mutate(['mig', '-i', '0', '-cgi', '19', '-C']))
    expect(isCosplayError(error)).toBe(true)
    expect(error.code).toBe('MIG_NO_FREE_SLOT')
    expect(error.exit).toBe(3)
    expect(error.argv).toEqual(['sudo', '-n', '/usr/bin/nvidia-smi', 'mig', '-i', '0', '-cgi', '19', '-C'])
    expect(error.line).toBe('Unable to create a GPU instance on GPU 0 using profile 9: Insufficient Resources')
    expect(error.message).toBe('nvidia-smi mig -i 0 -cgi 19 -C failed: Insufficient Resources')
    // The GIs made before the failure stay readable for undo.
    expect(error.stdout).toBe(stdout)
  })

  test('sudo refusing to ask for a password is a permission error', async () => {
    const smi = new Smi(new ScriptedExecutor({exitCode: 1, stderr: 'sudo: a password is required\n'}), {path: 'nvidia-smi', sudo: true})
    const error = await failureOf(smi.mutate(['-i', '0', '-pl', '300']))
    expect([error.code, error.exit]).toEqual(['SMI_PERMISSION', 4])
    expect(error.line).toBe('sudo: a password is required')
  })

  test('a missing binary is SMI_NOT_FOUND', async () => {
    const missing = Object.assign(new Error('spawn nvidia-smi ENOENT'), {code: 'ENOENT'})
    const error = await failureOf(new Smi(new ScriptedExecutor(missing), {path: 'nvidia-smi', sudo: false}).read(['-q']))
    expect([error.code, error.exit]).toEqual(['SMI_NOT_FOUND', 3])
    expect(error.cause).toBe(missing)
  })

  test('a binary that is not executable (EACCES) says so, with the fix', async () => {
    const denied = Object.assign(new Error('spawn /opt/nvidia-smi EACCES'), {code: 'EACCES'})
    const error = await failureOf(new Smi(new ScriptedExecutor(denied), {path: '/opt/nvidia-smi', sudo: false}).read(['-q']))
    expect([error.code, error.exit]).toEqual(['SMI_NOT_EXECUTABLE', 3])
    expect(error.message).toContain('/opt/nvidia-smi')
    expect(error.fix.join(' ')).toContain('chmod +x /opt/nvidia-smi')
    expect(error.cause).toBe(denied)
  })

  describe('a failed change says whether it was refused outright (it changed nothing)', () => {
    const changeFailing = (answer: ConstructorParameters<typeof ScriptedExecutor>[0]) =>
      failureOf(new Smi(new ScriptedExecutor(answer), {path: 'nvidia-smi', sudo: true}).mutate(['-i', '0', '-pm', '1']))

    test.each([
      {
        what: 'Insufficient Permissions',
        answer: {
          exitCode: 4,
          stdout: 'Failed to set persistence mode for GPU 00000000:18:00.0: Insufficient Permissions\nTerminating early due to previous errors.\n',
        },
      },
      {what: 'sudo wanting a password', answer: {exitCode: 1, stderr: 'sudo: a password is required\n'}},
      {what: 'no free slot', answer: {exitCode: 2, stdout: fixture('gh200-96gb__mig-cgi-error-insufficient-resources.txt')}},
    ])('refused: $what', async ({answer}) => {
      expect((await changeFailing(answer)).refused).toBe(true)
    })

    test('refused: a program that could not be started', async () => {
      expect((await changeFailing(Object.assign(new Error('spawn sudo ENOENT'), {code: 'ENOENT'}))).refused).toBe(true)
    })

    test.each([
      {
        what: 'a -cgi list that made instances before it failed',
        answer: {exitCode: 2, stdout: fixture('a100-sxm4-40gb__mig-cgi-19-19-14-9-insufficient-resources.txt')},
      },
      {what: 'MIG mode left pending', answer: {exitCode: 1, stdout: fixture('a100-pcie-80gb__mig-1-pending-in-use-by-another-client.txt')}},
      {what: 'an unknown error', answer: {exitCode: 1, stderr: 'Failed to initialize NVML: Unknown Error\n'}},
      {what: 'nothing printed', answer: {exitCode: 1}},
      {what: 'a timeout', answer: {exitCode: 124, timedOut: true}},
      {what: 'an exit status alone', answer: {exitCode: 4, stdout: 'something odd happened\n'}},
    ])('outcome open: $what', async ({answer}) => {
      expect((await changeFailing(answer)).refused).toBe(false)
    })

    test('a read is never a refused change', async () => {
      const smi = new Smi(new ScriptedExecutor({exitCode: 4, stdout: 'Unable to list GPU instances: Insufficient Permissions\n'}), {
        path: 'nvidia-smi',
        sudo: false,
      })
      expect((await failureOf(smi.read(['mig', '-lgi']))).refused).toBe(false)
    })
  })

  test('output it does not know is quoted short and printable, with its size, never raw', async () => {
    const binary = `\u001b[2J\u0000${'\ufffd'.repeat(500)}\nmore`
    const smi = new Smi(new ScriptedExecutor({exitCode: 1, stdout: binary}), {path: 'nvidia-smi', sudo: false})
    const error = await failureOf(smi.read(['-q']))
    expect(error.code).toBe('SMI_FAILED')
    expect(error.message).toBe('nvidia-smi -q failed: exit status 1, "?\\nmore" (510 bytes)')
  })

  test('a message in one short printable line reads as it is', async () => {
    const smi = new Smi(new ScriptedExecutor({exitCode: 1, stderr: 'Failed to initialize NVML: Unknown Error'}), {path: 'nvidia-smi', sudo: false})
    expect((await failureOf(smi.read(['-L']))).message).toBe('nvidia-smi -L failed: Unknown Error')
  })

  test('a hang past timeoutMs is SMI_TIMEOUT', async () => {
    const smi = new Smi(new ScriptedExecutor({exitCode: 124, timedOut: true}), {path: 'nvidia-smi', sudo: false, timeoutMs: 50})
    const error = await failureOf(smi.read(['-q']))
    expect(error.code).toBe('SMI_TIMEOUT')
    expect(error.argv).toEqual(['nvidia-smi', '-q'])
  })
})

describe('classifySmiFailure', () => {
  const rows: Array<{file: string; code: string; exit: number; line: string}> = [
    {
      file: 'a100-sxm4-40gb__mig-cgi-19-19-14-9-insufficient-resources.txt',
      code: 'MIG_NO_FREE_SLOT',
      exit: 3,
      line: 'Unable to create a GPU instance on GPU 0 using profile 9: Insufficient Resources',
    },
    {
      file: 'gh200-96gb__mig-cgi-error-insufficient-resources.txt',
      code: 'MIG_NO_FREE_SLOT',
      exit: 3,
      line: 'Unable to create a GPU instance on GPU 0 using profile 20: Insufficient Resources',
    },
    {
      file: 'gh200-96gb__mig-cgi-error-in-use-by-another-client.txt',
      code: 'GPU_IN_USE',
      exit: 3,
      line: 'Unable to create a GPU instance on GPU 0 using profile 20: In use by another client',
    },
    {
      file: 'gh200-96gb__mig-0-error-in-use-by-another-client.txt',
      code: 'GPU_IN_USE',
      exit: 3,
      line: 'Unable to disable MIG Mode for GPU 00000009:01:00.0: In use by another client',
    },
    // No space after the colon in this one.
    {
      file: 'a100-pcie-80gb__mig-1-pending-in-use-by-another-client.txt',
      code: 'GPU_IN_USE',
      exit: 3,
      line: 'Warning: MIG mode is in pending enable state for GPU 00000001:00:00.0:In use by another client',
    },
    {
      file: 'cmp170hx-modded__mig-cgi-7g40gb-C-invalid-argument.txt',
      code: 'SMI_INVALID_ARGUMENT',
      exit: 3,
      line: 'Unable to create a GPU instance on GPU 0 using profile 7g.40gb: Invalid Argument',
    },
    {
      file: 'hopper-700w-x4__pl-50-invalid-partial.txt',
      code: 'SMI_INVALID_ARGUMENT',
      exit: 3,
      line: 'Provided power limit 50.00 W is not a valid power limit which should be between 200.00 W and 700.00 W for GPU 00000000:06:00.0',
    },
    {
      file: 't4__pl-invalid-value-out-of-range.txt',
      code: 'SMI_INVALID_ARGUMENT',
      exit: 3,
      line: 'Provided power limit 150.00 W is not a valid power limit which should be between 60.00 W and 70.00 W for GPU 00000000:00:04.0',
    },
    {
      file: 'unknown-gpu-in-container__pl-insufficient-permissions.txt',
      code: 'SMI_PERMISSION',
      exit: 4,
      line: 'Failed to set power management limit for GPU 00000000:01:00.0: Insufficient Permissions',
    },
    {
      file: 'a100-sxm4-80gb__lgc-or-ac-permission-denied.txt',
      code: 'SMI_PERMISSION',
      exit: 4,
      line: 'The current user does not have permission to change clocks for GPU 00000000:C1:00.0.',
    },
    {file: 'a100-vm-passthrough__gpu-reset-not-supported.txt', code: 'SMI_NOT_SUPPORTED', exit: 3, line: 'Resetting GPU 00000000:00:03.0 is not supported.'},
    {
      file: 'a100-vm-passthrough__mig-1-pending-enable-not-supported.txt',
      code: 'SMI_NOT_SUPPORTED',
      exit: 3,
      line: 'Warning: MIG mode is in pending enable state for GPU 00000000:00:03.0:Not Supported',
    },
    {
      file: 'gb10-dgx-spark__pl-not-supported-in-current-scope.txt',
      code: 'SMI_NOT_SUPPORTED',
      exit: 3,
      line: 'Changing power management limit is not supported in current scope for GPU: 0000000F:01:00.0.',
    },
    {file: 'a30__mig-lgi-no-gpu-instances-found.txt', code: 'SMI_NOT_FOUND_INSTANCE', exit: 3, line: 'No GPU instances found: Not Found'},
    {file: 'gh200-96gb__mig-dci-no-gpu-instances-found.txt', code: 'SMI_NOT_FOUND_INSTANCE', exit: 3, line: 'No GPU instances found: Not Found'},
    {file: 't4__nvidia-smi-i-1-no-devices-found.txt', code: 'NO_GPU', exit: 3, line: 'No devices were found'},
  ]

  test.each(rows)('$file -> $code', ({file, code, exit, line}) => {
    expect(classifySmiFailure(fixture(file), 1)).toMatchObject({code, exit, line})
  })

  test('the short reason is the tail of an "Unable to ...: Reason" line', () => {
    expect(classifySmiFailure(fixture('gh200-96gb__mig-cgi-error-insufficient-resources.txt')).reason).toBe('Insufficient Resources')
    expect(classifySmiFailure(fixture('a30__mig-lgi-no-gpu-instances-found.txt')).reason).toBe('No GPU instances found: Not Found')
  })

  test('unknown text falls back to the exit status, then to SMI_FAILED', () => {
    expect(classifySmiFailure('something odd happened', 4)).toMatchObject({code: 'SMI_PERMISSION', exit: 4, line: 'something odd happened'})
    expect(classifySmiFailure('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.', 9)).toMatchObject({
      code: 'SMI_FAILED',
      line: 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.',
    })
    expect(classifySmiFailure('', 1)).toEqual({code: 'SMI_FAILED', exit: 3, line: null, reason: null})
  })

  test('sudo and shell words are classified too', () => {
    expect(classifySmiFailure('sudo: nvidia-smi: command not found').code).toBe('SMI_NOT_FOUND')
    expect(classifySmiFailure('Operation not permitted').code).toBe('SMI_PERMISSION')
  })
})
