/**
 * The GPU box of the --host end-to-end tests: a container running sshd + node + the nvidia-smi simulator (user
 * `tester`, passwordless sudo for nvidia-smi only, its state in the box's /var/lib/gpu-cosplay).
 */
import {spawnSync} from 'node:child_process'
import {chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {connect, createServer} from 'node:net'
import {join} from 'node:path'

import {BASE_IMAGE, BIN, docker, SIM_BIN, SIM_MODULE} from './support.js'

export const BOX_IMAGE = 'gpu-cosplay-test-box:bookworm'
export const BOX_LABEL = 'io.gpu-cosplay.test-box'

/** A client HOME with its own ~/.ssh/id_ed25519 (the key the box authorises). */
export function clientHome(): string {
  const home = mkdtempSync('/tmp/gpu-cosplay-e2e-remote-')
  mkdirSync(join(home, '.ssh'), {mode: 0o700})
  spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'client', '-f', join(home, '.ssh', 'id_ed25519')], {stdio: 'ignore'})
  return home
}

/** Builds BOX_IMAGE with this public key authorised for tester. The first build apt-gets sudo: minutes on a cold machine. */
export function buildBoxImage(authorizedKeyPath: string): void {
  const context = mkdtempSync('/tmp/gpu-cosplay-e2e-box-')
  // node on the box: this machine's own binary (Debian bookworm, as the base image)
  copyFileSync(process.execPath, join(context, 'node'))
  copyFileSync(SIM_BIN, join(context, 'nvidia-smi-sim'))
  copyFileSync(SIM_MODULE, join(context, 'nvidia_smi_sim.py'))
  copyFileSync(authorizedKeyPath, join(context, 'authorized_keys'))
  writeFileSync(join(context, 'nvidia-smi'), '#!/bin/sh\nGPU_COSPLAY_SIM_STATE=/var/lib/sim/state.json exec /opt/sim/nvidia-smi "$@"\n')
  chmodSync(join(context, 'nvidia-smi'), 0o755)
  writeFileSync(
    join(context, 'Dockerfile'),
    `FROM ${BASE_IMAGE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sudo >/dev/null && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --shell /bin/bash tester && mkdir -p /run/sshd /opt/sim /var/lib/sim /var/lib/gpu-cosplay /home/tester/.ssh \\
 && chmod 1777 /var/lib/gpu-cosplay && ssh-keygen -A \\
 && echo 'tester ALL=(root) NOPASSWD: /usr/local/bin/nvidia-smi' > /etc/sudoers.d/tester && chmod 0440 /etc/sudoers.d/tester
COPY node /usr/local/bin/node
COPY nvidia-smi-sim /opt/sim/nvidia-smi
COPY nvidia_smi_sim.py /opt/sim/nvidia_smi_sim.py
COPY nvidia-smi /usr/local/bin/nvidia-smi
COPY authorized_keys /home/tester/.ssh/authorized_keys
RUN chown -R tester:tester /home/tester/.ssh && chmod 700 /home/tester/.ssh && chmod 600 /home/tester/.ssh/authorized_keys \\
 && GPU_COSPLAY_SIM_STATE=/var/lib/sim/state.json /opt/sim/nvidia-smi --sim-init --model h200 --gpus 1 \\
 && GPU_COSPLAY_SIM_STATE=/var/lib/sim/state.json /opt/sim/nvidia-smi --sim-set require_root=true \\
 && chmod 0777 /var/lib/sim && chmod 0666 /var/lib/sim/*
CMD ["/usr/sbin/sshd", "-D", "-e"]
`,
  )
  try {
    docker(['build', '-q', '-t', BOX_IMAGE, context])
  } finally {
    rmSync(context, {recursive: true, force: true})
  }
}

/** Whether an sshd answers with its banner on 127.0.0.1:port. */
export function sshBanner(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.setTimeout(2000)
    socket.once('data', (data) => {
      socket.destroy()
      resolve(data.toString().startsWith('SSH-2.0'))
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
    // docker-proxy accepts and then closes while sshd is not listening yet: no data, no error, and a closed socket
    // never times out, so without this the wait would hang (it did, once in a few runs)
    socket.once('close', () => resolve(false))
  })
}

export async function waitForSshd(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await sshBanner(port))) {
    if (Date.now() > deadline) throw new Error(`sshd on 127.0.0.1:${port} never answered`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

export type Result = {exitCode: number | null; stdout: string; stderr: string}
export type ClientOptions = {env?: Record<string, string>; input?: string}

/** The built CLI on this machine as the client, its HOME from `home()` (a function: the tests make it in beforeAll). */
export function cliClient(home: () => string) {
  const clientEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home(),
    NO_COLOR: '1',
    ...extra,
  })
  const client = (args: readonly string[], options: ClientOptions = {}): Result => {
    const r = spawnSync(process.execPath, [BIN, ...args], {encoding: 'utf8', env: clientEnv(options.env), input: options.input ?? '', timeout: 120_000})
    return {exitCode: r.status, stdout: r.stdout, stderr: r.stderr}
  }
  const clientJson = (args: readonly string[], options: ClientOptions = {}): Result & {json: any} => {
    const r = client([...args, '--json'], options)
    try {
      return {...r, json: JSON.parse(r.stdout)}
    } catch {
      throw new Error(`gpu-cosplay ${args.join(' ')} --json printed no JSON (exit ${r.exitCode}):\n${r.stdout}\n${r.stderr}`)
    }
  }
  return {client, clientEnv, clientJson}
}

/** An OpenSSH public-key line without its comment (`type base64`): what a known_hosts line pins. */
export function pinnedKey(publicKeyLine: string): string {
  return publicKeyLine.trim().split(/\s+/).slice(0, 2).join(' ')
}

/** A loopback port nothing listened on a moment ago (for an sshd to take, or as an address where nothing answers). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const {port: free} = server.address() as {port: number}
      server.close(() => resolve(free))
    })
  })
}
