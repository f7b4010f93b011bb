/**
 * A client command that needs one answer from this box's engine and then works on as the user (ssh-config writes the
 * user's own ~/.ssh files): `sudo -n ENGINE argv --json`, its stderr shown, its result or error returned as if it
 * ran here — what run-remote does for a box reached over ssh.
 */
import {spawn} from 'node:child_process'

import type {BoxConfig} from '../core/box-config.js'
import {readBoxConfig} from '../core/read-box-config.js'
import {HOST_ENV} from '../core/names.js'
import {payloadOf} from '../remote/run-remote.js'

/** The box's configuration when this process is a member's client on an installed box (not root, not a sandbox). */
export function memberOfBox(env: NodeJS.ProcessEnv = process.env): BoxConfig | null {
  if (process.getuid?.() === 0) return null
  const read = readBoxConfig()
  // bin/run.js pinned the box's state directory for a client; a sandbox names its own
  return read?.ok && env[HOST_ENV.stateDir] === read.config.stateDir ? read.config : null
}

export function askEngine(config: BoxConfig, argv: readonly string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn('sudo', ['-n', '--', config.engine, ...argv], {stdio: ['ignore', 'pipe', 'inherit']})
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.on('error', reject)
    child.on('close', (exitCode, signal) => {
      try {
        resolve(payloadOf({stdout, exitCode, signal}, 'the gpu-cosplay engine', argv[0], {prefix: false}).payload)
      } catch (error) {
        reject(error)
      }
    })
  })
}
