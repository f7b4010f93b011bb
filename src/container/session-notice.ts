/**
 * What the reaper (apply/reap.ts) needs from a session's container: telling its users that it ends soon, and when they
 * last logged in. Both run in the container as the session user (docker exec -u UID:GID), never as root, and the
 * message reaches the shell as a variable, never as code: the user's own files in there choose nothing root runs.
 */
import type {LoginActivity, SessionNotifier} from '../apply/reap.js'
import type {SessionRecord} from '../apply/gpu-book.js'
import type {DockerRuntime} from './runtime.js'

/** Where the notice and the login mark live in the container (docker/entrypoint.sh's LOGIN_NOTICE reads the same). */
export const NOTICE_DIR = '/tmp/gpu-cosplay'
const NOTICE_ENV = 'GPU_COSPLAY_NOTICE'
/** the user may make these hang (a FIFO in place of the notice, a terminal that does not read): the reaper goes on */
const EXEC_TIMEOUT_MS = 10_000

/** The notice file (shown at login) and a line to every terminal the session user owns (their ssh sessions). */
const NOTIFY_SCRIPT = `d=${NOTICE_DIR}; mkdir -p "$d" && printf '%s\\n' "$${NOTICE_ENV}" >"$d/notice.tmp" && mv -f "$d/notice.tmp" "$d/notice"
for t in /dev/pts/[0-9]*; do if [ -O "$t" ]; then printf '\\r\\n%s\\r\\n' "$${NOTICE_ENV}" >"$t" 2>/dev/null || true; fi; done; exit 0`

/** "<terminals the user holds> <mtime of the login mark, or 0>" */
const LOGIN_SCRIPT = `n=0; for t in /dev/pts/[0-9]*; do if [ -O "$t" ]; then n=$((n+1)); fi; done
s=$(stat -c %Y ${NOTICE_DIR}/last-login 2>/dev/null || echo 0); echo "$n $s"`

function userOf(session: SessionRecord): string | null {
  return session.container ? `${session.container.uid}:${session.container.gid}` : null
}

export function containerNotifier(runtime: DockerRuntime): SessionNotifier {
  return async (session, message) => {
    const user = userOf(session)
    if (user === null || !session.container) return // no container: ps and status show the time left
    const done = await runtime.exec(session.container.id, ['sh', '-c', NOTIFY_SCRIPT], {user, env: {[NOTICE_ENV]: message}, timeoutMs: EXEC_TIMEOUT_MS})
    if (done.exitCode !== 0) throw new Error(`the notice exited ${done.exitCode}: ${done.stderr.trim().split('\n')[0] ?? ''}`)
  }
}

export function containerLogins(runtime: DockerRuntime, now: () => number = Date.now): LoginActivity {
  return async (session) => {
    const user = userOf(session)
    if (user === null || !session.container) return null
    const done = await runtime.exec(session.container.id, ['sh', '-c', LOGIN_SCRIPT], {user, timeoutMs: EXEC_TIMEOUT_MS})
    const match = /^(\d+) (\d+)\s*$/.exec(done.stdout)
    if (done.exitCode !== 0 || !match) return null
    if (Number(match[1]) > 0) return now()
    const markedMs = Number(match[2]) * 1000
    return markedMs > 0 ? Math.min(markedMs, now()) : null
  }
}
