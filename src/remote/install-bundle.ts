/**
 * `remote install`: one tar.gz of the bundle over the ssh channel's stdin into
 * ~/.cache/gpu-cosplay/<version> on the box (unpacked beside it, then moved in place, so a broken transfer
 * never leaves a half folder that the forwarding would run), after checking the box's node is >= 20.
 */
import {spawn} from 'node:child_process'

import {bundlePaths} from './remote-bundle.js'
import {singleQuote} from '../core/shell-words.js'
import {remoteBundleDirExpr} from './remote-command-line.js'
import {RemoteError} from './remote-error.js'
import type {SshTransport} from './ssh-transport.js'

export type InstallResult = {host: string; version: string; dir: string; node: string; files: string[]; bytes: number}

const MIN_NODE_MAJOR = 20

export async function checkRemoteNode(transport: SshTransport): Promise<string> {
  const label = transport.endpoint.label
  const result = await transport.exec('node --version').done
  const version = result.stdout.trim()
  const major = /^v(\d+)\./.exec(version)
  if (result.exitCode !== 0 || !major) {
    throw new RemoteError('REMOTE_NODE_MISSING', `${label} has no node on the PATH of a non-interactive ssh session`, {
      exit: 3,
      fix: [`install Node.js >= ${MIN_NODE_MAJOR} on the box (e.g. apt-get install nodejs, or a tarball from nodejs.org in /usr/local)`],
    })
  }
  if (Number(major[1]) < MIN_NODE_MAJOR) {
    throw new RemoteError('REMOTE_NODE_TOO_OLD', `${label} has node ${version}; gpu-cosplay needs >= ${MIN_NODE_MAJOR}`, {exit: 3})
  }
  return version
}

export async function installBundle(transport: SshTransport, root: string, version: string): Promise<InstallResult> {
  const node = await checkRemoteNode(transport)
  const files = bundlePaths(root)
  const script = [
    'set -e',
    `B="${remoteBundleDirExpr(version)}"`,
    'T="$B.part.$$"',
    'rm -rf "$T"',
    'mkdir -p "$T"',
    'tar -xzf - -C "$T"',
    'rm -rf "$B"',
    'mv "$T" "$B"',
    'printf %s "$B"',
  ].join('; ')
  const tar = spawn('tar', ['-czf', '-', '-C', root, '--', ...files], {stdio: ['ignore', 'pipe', 'pipe']})
  let bytes = 0
  let tarError = ''
  tar.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length))
  tar.stderr.on('data', (chunk: Buffer) => (tarError += chunk.toString()))
  const tarDone = new Promise<number | null>((resolve) => tar.on('close', resolve))
  let remoteError = ''
  const result = await transport.exec(`sh -c ${singleQuote(script)}`, {stdin: tar.stdout, onStderr: (chunk) => (remoteError += chunk.toString())}).done
  const tarExit = await tarDone
  if (tarExit !== 0) throw new RemoteError('REMOTE_INSTALL_FAILED', `packing the bundle failed: ${tarError.trim().split('\n')[0]}`)
  if (result.exitCode !== 0) {
    throw new RemoteError(
      'REMOTE_INSTALL_FAILED',
      `unpacking on ${transport.endpoint.label} failed: ${remoteError.trim().split('\n')[0] || `exit ${result.exitCode}`}`,
      {
        fix: ['check free space and that tar exists on the box'],
      },
    )
  }
  return {host: transport.endpoint.label, version, dir: result.stdout.trim(), node, files, bytes}
}
