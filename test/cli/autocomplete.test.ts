import {spawnSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, runCli} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

// the generated function uses bash-completion's helpers, as a user's interactive bash has them
const BASH_COMPLETION = '/usr/share/bash-completion/bash_completion'
const hasBashCompletion = existsSync(BASH_COMPLETION)

/** What bash completes for the words typed so far, with the completion function `autocomplete` generated. */
function completions(functionsFile: string, words: string[]): string[] {
  const script = `source ${BASH_COMPLETION}; source '${functionsFile}'; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; COMP_LINE='${words.join(' ')}'; COMP_POINT=\${#COMP_LINE}; _gpu-cosplay_autocomplete; printf '%s\\n' "\${COMPREPLY[@]}"`
  const result = spawnSync('bash', ['-c', script], {encoding: 'utf8'})
  expect(result.stderr).toBe('')
  return result.stdout.split('\n').filter(Boolean)
}

;(hasBashCompletion ? it : it.skip)('autocomplete bash builds a completion function that completes our commands and their flags', () => {
  const env = baseEnv()
  const result = runCli(['autocomplete', 'bash'], env)
  expect(result.exitCode).toBe(0)
  expect(result.stdout).toContain('autocomplete script bash')
  const functionsFile = join(env.HOME!, '.cache', 'gpu-cosplay', 'autocomplete', 'functions', 'bash', 'gpu-cosplay.bash')
  expect(completions(functionsFile, ['gpu-cosplay', 'pl'])).toEqual(['plan'])
  expect(completions(functionsFile, ['gpu-cosplay', 'ssh-c'])).toEqual(['ssh-config'])
  expect(completions(functionsFile, ['gpu-cosplay', 'plan', '--ma'])).toEqual(['--match'])
  // a topic's commands are typed with a space (topicSeparator)
  expect(completions(functionsFile, ['gpu-cosplay', 'lease', 'h'])).toEqual(['hold'])
  expect(completions(functionsFile, ['gpu-cosplay', 'lease', 'hold', '--ho'])).toEqual(expect.arrayContaining(['--holder', '--host-gpu']))
})
