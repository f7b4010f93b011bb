/**
 * Paths a caller names, opened with the caller's own rights. The engine runs as root: resolved as root, a
 * `--workspace /root` or a symlink in the caller's home would mount or read what the caller may not. So the engine
 * resolves them in a child process that runs as the caller (setpriv, with their groups), and uses what it found.
 */
import path from 'node:path'

import {InputError, StateError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'

export type Caller = {readonly uid: number; readonly gid: number; readonly user: string}

/** One path per line of output would break on a name with a newline: NUL ends each answer. */
const RESOLVE_SCRIPT = `
for arg do
  want=\${arg%%:*}; p=\${arg#*:}
  if ! r=$(realpath -e -- "$p" 2>/dev/null); then printf 'missing\\0'; continue; fi
  if [ "$want" = dir ] && [ ! -d "$r" ]; then printf 'not-a-folder\\0'; continue; fi
  if [ ! -r "$r" ] || { [ -d "$r" ] && [ ! -x "$r" ]; }; then printf 'unreadable\\0'; continue; fi
  if [ "$want" != ro ] && [ ! -w "$r" ]; then printf 'unwritable\\0'; continue; fi
  printf 'ok:%s\\0' "$r"
done`

type Want = 'dir' | 'rw' | 'ro'

/** argv that runs the rest as the caller: their uid, gid and supplementary groups, nothing of root's. */
export function asCaller(caller: Caller, argv: readonly string[]): string[] {
  return ['setpriv', `--reuid=${caller.uid}`, `--regid=${caller.gid}`, '--init-groups', '--', ...argv]
}

/**
 * --workspace and --volume sources as the caller sees them: each must exist and be readable by the caller (and
 * writable, for a read-write mount; the workspace is both); the result names the resolved folders, links followed
 * as the caller. A named Docker volume is refused: it is shared by everyone who can name it.
 */
export async function resolveMountsAsCaller(
  mounts: {workspace: string; volumes: readonly string[]},
  caller: Caller,
  executor: Executor,
): Promise<{workspace: string; volumes: string[]}> {
  const volumes = mounts.volumes.map((spec) => {
    const [source, target, mode] = spec.split(':')
    if (!source.startsWith('/')) {
      throw new StateError('BAD_VOLUME', `--volume ${spec}: a named Docker volume is shared by everyone on this box; mount a folder of yours`, {exit: 4})
    }
    return {source, target, mode}
  })
  const asked: Array<{flag: string; source: string; want: Want}> = [
    {flag: '--workspace', source: mounts.workspace, want: 'dir'},
    ...volumes.map((v) => ({
      flag: `--volume ${v.source}:${v.target}${v.mode ? `:${v.mode}` : ''}`,
      source: v.source,
      want: (v.mode === 'ro' ? 'ro' : 'rw') as Want,
    })),
  ]
  for (const a of asked) if (/[\0\n]/.test(a.source)) throw new InputError('BAD_PATH', `${a.flag}: a path with a newline cannot be mounted`)
  const result = await executor.run(asCaller(caller, ['/bin/sh', '-c', RESOLVE_SCRIPT, 'sh', ...asked.map((a) => `${a.want}:${a.source}`)]), {
    timeoutMs: 10_000,
  })
  const answers = result.stdout.split('\0')
  if (result.exitCode !== 0 || answers.length < asked.length) {
    throw new StateError(
      'MOUNT_CHECK_FAILED',
      `cannot check the mounts as ${caller.user}: ${result.stderr.trim().split('\n')[0] || `exit ${result.exitCode}`}`,
      {exit: 4},
    )
  }
  const resolved = asked.map((a, i) => {
    const answer = answers[i]
    if (answer.startsWith('ok:')) return answer.slice(3)
    const what =
      {
        missing: 'does not exist (or you cannot reach it)',
        'not-a-folder': 'is not a folder',
        unreadable: 'is not readable by you',
        unwritable: 'is not writable by you (mount it read-only with :ro)',
      }[answer] ?? answer
    throw new StateError('MOUNT_NOT_ALLOWED', `${a.flag}: ${a.source} ${what}`, {
      exit: 4,
      fix: ['mount only what you may read (and write, for a read-write mount)'],
    })
  })
  return {
    workspace: resolved[0],
    volumes: volumes.map((v, i) => [resolved[i + 1], v.target, ...(v.mode ? [v.mode] : [])].join(':')),
  }
}

const PUBLIC_KEY_FILES = ['.ssh/id_ed25519.pub', '.ssh/gpu-cosplay/client_ed25519.pub']

/**
 * The caller's own public keys (~/.ssh/id_ed25519.pub, the gpu-cosplay client key), read as the caller: a link
 * there to a file of root's reads nothing. Lines that are not public keys are dropped.
 */
export async function callerPublicKeys(caller: Caller, home: string, executor: Executor): Promise<string[]> {
  const files = PUBLIC_KEY_FILES.map((f) => path.join(home, f))
  const script = 'for f do head -c 16384 -- "$f" 2>/dev/null; printf "\\n"; done'
  const result = await executor.run(asCaller(caller, ['/bin/sh', '-c', script, 'sh', ...files]), {timeoutMs: 10_000}).catch(() => null)
  if (result === null) return []
  return [
    ...new Set(
      result.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-[a-z0-9@.-]+) [A-Za-z0-9+/=]+( [^\n]*)?$/.test(l)),
    ),
  ]
}
