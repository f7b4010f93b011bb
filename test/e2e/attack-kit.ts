/**
 * What the attacker suite (attacks.test.ts) needs beside SharedBox: talking to the engine the way the sudo rule lets a
 * member (argv, or the v1 request protocol of /work/notes/protocol.md on stdin), payloads that note who ran them, and
 * the watch that says whether the box's set-up, the teammate's session and files and the GPU are as they were.
 *
 * Nothing here waits on a clock to win a race: every wait polls for a state (a queue entry, a file, an exit).
 */
import {spawn, spawnSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

import {type Background, ENGINE, type Member, MEMBERS, type SharedBox, STATE_DIR} from './shared-box.js'
import {docker, type Result} from './support.js'

export {ENGINE}
/** the box's set-up: what `system install` wrote and a member must never change */
export const BOX_FILES = ['/etc/gpu-cosplay/config.yaml', '/etc/sudoers.d/gpu-cosplay', ENGINE] as const

// ---------------------------------------------------------------------------------------------------------------
// answers

export type EngineError = {code: string; message: string; fix?: string[]; exit: number}
export type Frame = {t: string; [key: string]: any}
/** what came back from one call of the engine, read as protocol v1 frames (lines that are not frames kept apart) */
export type Answer = Result & {frames: Frame[]; junk: string[]; result: any; error: EngineError | undefined}

export function answerOf(r: Result): Answer {
  const frames: Frame[] = []
  const junk: string[] = []
  for (const line of r.stdout.split('\n')) {
    if (line.trim() === '') continue
    try {
      const frame = JSON.parse(line)
      if (frame && typeof frame === 'object' && typeof frame.t === 'string') frames.push(frame)
      else junk.push(line)
    } catch {
      junk.push(line)
    }
  }
  const result = frames.find((f) => f.t === 'result')
  const error = frames.find((f) => f.t === 'error')
  return {...r, frames, junk, result: result?.value, error: error?.error}
}

/** the engine's verdict on a call: its exit, the error frame's code and exit, whether it served a result */
export function verdict(a: Answer): {exit: number | null; code: string | undefined; errorExit: number | undefined; served: boolean} {
  return {exit: a.exitCode, code: a.error?.code, errorExit: a.error?.exit, served: a.result !== undefined}
}

/** what the engine did with a request: served it, refused it (code and exit), or gave no protocol answer at all */
export function answered(a: Answer): string {
  if (a.result !== undefined) return 'served'
  if (a.error) return `refused ${a.error.code} (exit ${a.exitCode})`
  return `no answer (exit ${a.exitCode})`
}
/** served, or refused with exit 2 or 4: an answer in the protocol either way */
export const ANSWERED = expect.stringMatching(/^(served|refused [A-Z_]+ \(exit [24]\))$/)

/** `--json` output of the CLI: {exit, code} (code undefined when it printed no error) */
export function cliVerdict(r: Result): {exit: number | null; code: string | undefined} {
  return {exit: r.exitCode, code: jsonOf(r)?.error?.code}
}

export function jsonOf(r: Result): any {
  try {
    return JSON.parse(r.stdout)
  } catch {
    return undefined
  }
}

/** the engine refused: exit 2 or 4 with a matching error frame, nothing served */
export const REFUSED = (exit: 2 | 4, code: unknown) => ({
  exit,
  code,
  errorExit: exit,
  served: false,
})

// ---------------------------------------------------------------------------------------------------------------
// the v1 request protocol

export const MATCH = 'balanced'

/** an `up` request with every field the schema asks for; `fields` override */
export function upRequest(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1,
    op: 'up',
    target: 't4',
    hostGpu: 0,
    match: MATCH,
    name: null,
    strict: false,
    noMps: false,
    lockClock: false,
    capPower: false,
    ttlMs: null,
    wait: false,
    timeoutMs: null,
    container: null,
    ...fields,
  }
}

/** the `container` part of an up request */
export function containerRequest(workspace: string, publicKey: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    image: null,
    workspace,
    volumes: [],
    env: [],
    sshPort: null,
    sshBind: '127.0.0.1',
    shmSizeBytes: null,
    sudo: false,
    publicKeys: [publicKey],
    ...fields,
  }
}

/** a request as the member hands it: objects become one JSON line each, strings go as they are */
function bytesOf(lines: ReadonlyArray<string | object>): string {
  return lines.map((l) => (typeof l === 'string' ? l : `${JSON.stringify(l)}\n`)).join('')
}

export type OpenRequest = {bg: Background; answer: Promise<Answer>}

/**
 * `sudo -n ENGINE` with no argument, `lines` on stdin. stdin stays open until the engine answers (a result or an error
 * frame; EOF on stdin would be a cancel) unless `close` says to close it at once; the answer is read when it exits.
 */
export function openRequest(
  box: SharedBox,
  member: Member,
  lines: ReadonlyArray<string | object>,
  options: {close?: boolean; timeoutMs?: number} = {},
): OpenRequest {
  const bg = track(box.start(member, ['/usr/bin/sudo', '-n', ENGINE]))
  bg.write(bytesOf(lines))
  if (options.close) bg.end()
  // an engine that never answers fails its test (with what it said) instead of hanging the suite
  const timer = setTimeout(() => bg.kill(), options.timeoutMs ?? 900_000)
  void bg.done.then(() => clearTimeout(timer))
  const answer = (async () => {
    if (!options.close) {
      while (!bg.exited() && !/"t"\s*:\s*"(result|error)"/.test(bg.stdout())) await tick()
      bg.end()
    }
    return answerOf(await bg.done)
  })()
  return {bg, answer}
}

export function request(
  box: SharedBox,
  member: Member,
  lines: ReadonlyArray<string | object>,
  options: {close?: boolean; timeoutMs?: number} = {},
): Promise<Answer> {
  return openRequest(box, member, lines, options).answer
}

// ---------------------------------------------------------------------------------------------------------------
// background work, and putting the box back between tests

const running = new Set<Background>()

/** remembered, so that settle() ends it however the test ends */
export function track(bg: Background): Background {
  running.add(bg)
  void bg.done.then(() => running.delete(bg))
  return bg
}

export const tick = (ms = 100) => new Promise((resolve) => setTimeout(resolve, ms))

/** polls `test` until it holds; throws after `timeoutMs` (a deadline, never a sleep that decides anything) */
export async function until<T>(what: string, test: () => T | undefined | false | null, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = test()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await tick(200)
  }
}

type ProcInfo = {pid: number; ppid: number; pgrp: number; sid: number; tpgid: number; uid: number; comm: string}

export function procInfo(pid: number): ProcInfo | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? -1)
    return {pid, ppid: Number(fields[1]), pgrp: Number(fields[2]), sid: Number(fields[3]), tpgid: Number(fields[5]), uid, comm}
  } catch {
    return null
  }
}

function allProcs(): ProcInfo[] {
  return fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map((n) => procInfo(Number(n)))
    .filter((p): p is ProcInfo => p !== null)
}

/** every process below `pid` (children, their children, ...) */
export function descendants(pid: number): ProcInfo[] {
  const procs = allProcs()
  const found: ProcInfo[] = []
  const pending = [pid]
  while (pending.length > 0) {
    const parent = pending.pop()!
    for (const p of procs) {
      if (p.ppid !== parent) continue
      found.push(p)
      pending.push(p.pid)
    }
  }
  return found
}

/** root's node processes the engine runs for the fixture's members (SUDO_UID in their environment) */
function enginesOfMembers(): number[] {
  const uids = Object.values(MEMBERS).map((m) => `SUDO_UID=${m.uid}`)
  return allProcs()
    .filter((p) => p.uid === 0 && p.comm.startsWith('node'))
    .filter((p) => {
      try {
        const env = fs.readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0')
        return env.some((e) => uids.includes(e))
      } catch {
        return false
      }
    })
    .map((p) => p.pid)
}

function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // gone
  }
}

/** the `ps --queue --json` entries, whatever their shape (today an array; a {queue|entries|waiting} object too) */
export function queueEntries(box: SharedBox): any[] {
  const r = box.root(['ps', '--queue', '--json'])
  const j = jsonOf(r)
  if (Array.isArray(j)) return j
  for (const key of ['queue', 'entries', 'waiting', 'requests']) if (Array.isArray(j?.[key])) return j[key]
  throw new Error(`ps --queue --json: ${r.stdout}${r.stderr}`)
}

/** waiters whose entry names `word` (a user or a session name) */
export function queuedFor(box: SharedBox, word: string): number {
  return queueEntries(box).filter((e) => JSON.stringify(e).includes(word)).length
}

/**
 * Waits until `count` entries naming `word` wait in the queue, or `bg` ended first (refused, or failed): the state the
 * attack needs, by synchronisation.
 */
export async function queuedOrDone(box: SharedBox, word: string, bg: Background, count = 1): Promise<'queued' | 'done'> {
  return until(`${count} queue entries of ${word}`, () => (bg.exited() ? 'done' : queuedFor(box, word) >= count ? 'queued' : null), 180_000)
}

/** root's view of every session's name */
export function sessionNames(box: SharedBox): string[] {
  const r = box.root(['ps', '--json'])
  const j = jsonOf(r)
  if (!Array.isArray(j)) throw new Error(`ps --json: ${r.stdout}${r.stderr}`)
  return j.map((s: {name: string}) => s.name)
}

/**
 * Ends whatever a test left: its background commands and the engine processes below them (by pid), waiters, and every
 * session but the ones in `keep` (root's down). Files are the test's own business (restoreBox for the box's).
 */
export async function settle(box: SharedBox, keep: readonly string[]): Promise<void> {
  for (const bg of [...running]) {
    const below = descendants(bg.pid)
    bg.kill()
    for (const p of below) killPid(p.pid)
  }
  for (const pid of enginesOfMembers()) killPid(pid)
  await Promise.all([...running].map((bg) => bg.done))
  await until('an empty queue', () => queueEntries(box).length === 0, 60_000)
  const extra = sessionNames(box).filter((n) => !keep.includes(n))
  if (extra.length > 0) {
    const down = box.root(['down', ...extra, '--json'])
    if (down.exitCode !== 0) throw new Error(`down ${extra.join(' ')}: ${down.stdout}${down.stderr}`)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// what must not change

type Saved = {bytes: Buffer; mode: number; uid: number; gid: number} | null

/** the box files' bytes, to put back after an attack that worked (on today's code) */
export function saveBoxFiles(): Map<string, Saved> {
  const saved = new Map<string, Saved>()
  for (const file of BOX_FILES) {
    try {
      const st = fs.lstatSync(file)
      saved.set(file, {bytes: fs.readFileSync(file), mode: st.mode & 0o7777, uid: st.uid, gid: st.gid})
    } catch {
      saved.set(file, null)
    }
  }
  return saved
}

export function restoreBoxFiles(saved: Map<string, Saved>): void {
  for (const [file, was] of saved) {
    let now: Buffer | null = null
    try {
      now = fs.readFileSync(file)
    } catch {
      now = null
    }
    if (was === null) {
      if (now !== null) fs.rmSync(file, {force: true})
      continue
    }
    const st = now === null ? null : fs.lstatSync(file)
    if (now !== null && now.equals(was.bytes) && st && (st.mode & 0o7777) === was.mode && st.uid === was.uid && !st.isSymbolicLink()) continue
    const tmp = `${file}.attack-restore`
    fs.rmSync(tmp, {force: true})
    fs.writeFileSync(tmp, was.bytes, {mode: was.mode})
    fs.chmodSync(tmp, was.mode)
    fs.chownSync(tmp, was.uid, was.gid)
    fs.renameSync(tmp, file)
  }
}

export function sha(file: string): string | null {
  try {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex').slice(0, 16)
  } catch {
    return null
  }
}

function statOf(file: string): string {
  try {
    const st = fs.lstatSync(file)
    return `${st.uid}:${st.gid} ${(st.mode & 0o7777).toString(8)}${st.isSymbolicLink() ? ' link' : ''}`
  } catch {
    return 'absent'
  }
}

/** each entry under `dir` (itself first, folders sorted, links not followed) with its lstat; gone ones are skipped */
function eachEntry(dir: string, visit: (p: string, st: fs.Stats) => void): void {
  const walk = (p: string) => {
    let st: fs.Stats
    try {
      st = fs.lstatSync(p)
    } catch {
      return
    }
    visit(p, st)
    if (st.isDirectory()) for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name))
  }
  walk(dir)
}

/** every entry under `dir`, links not followed: type, owner, mode, and the content's hash or the link's target */
export function manifest(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  eachEntry(dir, (p, st) => {
    const rel = path.relative(dir, p) || '.'
    const head = `${st.uid}:${st.gid} ${(st.mode & 0o7777).toString(8)}`
    if (st.isSymbolicLink()) out[rel] = `${head} -> ${fs.readlinkSync(p)}`
    else if (st.isDirectory()) out[rel] = `${head} dir`
    else if (st.isFile()) out[rel] = `${head} ${sha(p)}`
    else out[rel] = `${head} other`
  })
  return out
}

/** entries under `dir` owned by root (links not followed) */
export function rootOwned(dir: string): string[] {
  return Object.entries(manifest(dir))
    .filter(([, v]) => v.startsWith('0:'))
    .map(([k]) => path.join(dir, k))
}

/** setuid files owned by root under `dir` (links not followed) */
export function setuidRoot(dir: string): string[] {
  const found: string[] = []
  eachEntry(dir, (p, st) => {
    if (st.isFile() && st.uid === 0 && (st.mode & 0o4000) !== 0) found.push(p)
  })
  return found
}

/** marker files the planted code left in `outDir`: "UID WHAT" lines; those written by uid 0 (or owned by root) */
export function rootRan(outDir: string): string[] {
  const found: string[] = []
  if (!fs.existsSync(outDir)) return found
  for (const name of fs.readdirSync(outDir)) {
    const file = path.join(outDir, name)
    const st = fs.lstatSync(file)
    if (!st.isFile()) continue
    const text = fs.readFileSync(file, 'utf8')
    if (st.uid === 0 || /^0 /m.test(text)) found.push(`${name} (owner ${st.uid}): ${text.trim().slice(0, 80)}`)
  }
  return found
}

/**
 * What root's ~/.ssh holds that an attack could change: its config, its keys, and entries naming this suite's sessions.
 * Other suites and benches write root's own sessions' known_hosts there too (root's `up`); those are not ours to watch.
 */
export function rootSshView(id: string): Record<string, string> | 'absent' {
  if (!fs.existsSync('/root/.ssh')) return 'absent'
  return Object.fromEntries(Object.entries(manifest('/root/.ssh')).filter(([k]) => k === 'config' || k.startsWith('id_') || k.includes(id)))
}

/** what every attack must leave as it was */
export type Snapshot = Record<string, unknown>

export class Watch {
  constructor(
    private readonly box: SharedBox,
    private readonly teammate: {member: Member; session: string},
    private readonly attacker: Member,
  ) {}

  take(): Snapshot {
    const teammateHome = this.box.home(MEMBERS[this.teammate.member].user)
    const snap: Snapshot = {}
    for (const file of BOX_FILES) snap[file] = `${sha(file)} ${statOf(file)}`
    snap['/etc/sudoers.d'] = fs.readdirSync('/etc/sudoers.d').sort()
    snap['/etc/gpu-cosplay'] = fs.existsSync('/etc/gpu-cosplay') ? manifest('/etc/gpu-cosplay') : 'absent'
    snap['/etc (attack names)'] = fs.readdirSync('/etc').filter((n) => n.includes('gcattack'))
    snap["/root/.ssh (config, keys, this suite's entries)"] = rootSshView(this.box.id)
    snap['teammate session'] = this.teammateSession()
    snap['teammate files'] = manifest(teammateHome)
    snap.sessions = sessionNames(this.box).sort()
    snap.gpu = this.box.gpuState()
    snap["root-owned in the attacker's home"] = rootOwned(this.box.home(MEMBERS[this.attacker].user))
    return snap
  }

  /** one line per thing that differs from `before` (empty: all as it was) */
  changesSince(before: Snapshot): string[] {
    const now = this.take()
    const changes: string[] = []
    for (const key of Object.keys(before)) {
      const a = JSON.stringify(before[key])
      const b = JSON.stringify(now[key])
      if (a !== b) changes.push(`${key}: ${describeChange(before[key], now[key])}`)
    }
    return changes
  }

  private teammateSession(): unknown {
    const ids = docker(['ps', '-a', '-q', '--filter', `label=io.gpu-cosplay.session=${this.teammate.session}`]).trim()
    if (!ids) return 'no container'
    const info = JSON.parse(docker(['inspect', ...ids.split('\n')]))
    return info.map((c: any) => ({
      id: c.Id,
      running: c.State.Running,
      startedAt: c.State.StartedAt,
      restarts: c.RestartCount,
      mounts: (c.Mounts ?? []).map((m: any) => `${m.Source}:${m.Destination}:${m.RW ? 'rw' : 'ro'}`).sort(),
    }))
  }
}

function describeChange(a: unknown, b: unknown): string {
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    const diffs = [...keys]
      .filter((k) => JSON.stringify((a as any)[k]) !== JSON.stringify((b as any)[k]))
      .map((k) => `${k}: ${JSON.stringify((a as any)[k]) ?? 'absent'} -> ${JSON.stringify((b as any)[k]) ?? 'absent'}`)
    return diffs.join('; ').slice(0, 600)
  }
  return `${JSON.stringify(a)} -> ${JSON.stringify(b)}`.slice(0, 600)
}

// ---------------------------------------------------------------------------------------------------------------
// the member's files

/** writes a file as root and gives it to the member (a member could have written it) */
export function plantFile(member: Member, file: string, content: string | Buffer, mode = 0o644): string {
  const {uid} = MEMBERS[member]
  fs.mkdirSync(path.dirname(file), {recursive: true})
  fs.rmSync(file, {force: true})
  fs.writeFileSync(file, content)
  fs.chmodSync(file, mode)
  fs.chownSync(file, uid, uid)
  return file
}

export function plantDir(member: Member, dir: string, mode = 0o755): string {
  const {uid} = MEMBERS[member]
  fs.mkdirSync(dir, {recursive: true})
  fs.chmodSync(dir, mode)
  fs.chownSync(dir, uid, uid)
  return dir
}

export function plantLink(member: Member, link: string, target: string): string {
  const {uid} = MEMBERS[member]
  fs.rmSync(link, {force: true, recursive: false})
  fs.symlinkSync(target, link)
  fs.lchownSync(link, uid, uid)
  return link
}

/** the commands the container's entrypoint runs by name (through PATH) while it is root */
export const ROOT_RUNS = [
  'bash',
  'getent',
  'groupadd',
  'groupmod',
  'useradd',
  'usermod',
  'mkdir',
  'chown',
  'chmod',
  'stat',
  'ls',
  'awk',
  'sed',
  'cp',
  'rm',
  'mv',
  'cat',
  'ln',
  'grep',
  'sort',
  'cut',
  'dirname',
  'ssh-keygen',
  'setpriv',
  'python3',
  'sleep',
  'sshd',
]

/**
 * Shell code that notes who runs it in OUT/ran-TAG-PID ("UID TAG") and, as root, leaves a setuid-root copy of the shell
 * beside it: what the attacker does with root in their container.
 */
export function noteWhoRuns(out: string, tag: string): string {
  return [
    `u=$(/usr/bin/id -u)`,
    `echo "$u ${tag}" > ${out}/ran-${tag}-$$ 2>/dev/null`,
    `if [ "$u" = 0 ]; then /bin/cp /bin/sh ${out}/rootsh-${tag}-$$ 2>/dev/null && /bin/chmod 4755 ${out}/rootsh-${tag}-$$ 2>/dev/null; fi`,
  ].join('\n')
}

/** a wrapper named after a program: notes who ran it, then runs the real one (never itself) */
export function wrapperScript(out: string): string {
  return `#!/bin/sh
n=\${0##*/}
${noteWhoRuns(out, '$n')}
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  if [ -x "$d/$n" ] && [ "$d/$n" != "$0" ]; then exec "$d/$n" "$@"; fi
done
exit 127
`
}

/** wrappers for every program in ROOT_RUNS, in `dir` (the member's), noting into `out` (a path inside the container) */
export function plantWrappers(member: Member, dir: string, out: string): void {
  plantDir(member, dir)
  for (const name of ROOT_RUNS) plantFile(member, path.join(dir, name), wrapperScript(out), 0o755)
}

/** C for an LD_PRELOAD library that does what noteWhoRuns does, from a constructor */
export const PRELOAD_C = `
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
  char file[160], line[64], buf[8192];
  int uid = (int)getuid(), pid = (int)getpid();
  snprintf(file, sizeof file, "/workspace/out/ran-preload-%d", pid);
  int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd >= 0) { int n = snprintf(line, sizeof line, "%d preload\\n", uid); if (write(fd, line, n) < 0) {} close(fd); }
  if (uid != 0 && geteuid() != 0) return;
  snprintf(file, sizeof file, "/workspace/out/rootsh-preload-%d", pid);
  int in = open("/bin/sh", O_RDONLY), out = open(file, O_WRONLY | O_CREAT | O_EXCL, 0755);
  if (in < 0 || out < 0) return;
  for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;) if (write(out, buf, n) != n) break;
  fchmod(out, 04755);
  close(in);
  close(out);
}
`

/** builds the LD_PRELOAD library once, with the host's gcc (the host and the base image are both glibc 2.36) */
export function buildPreload(dir: string): string {
  const src = path.join(dir, 'planted.c')
  const lib = path.join(dir, 'planted.so')
  fs.writeFileSync(src, PRELOAD_C)
  const r = spawnSync('gcc', ['-shared', '-fPIC', '-O1', '-o', lib, src], {encoding: 'utf8'})
  if (r.status !== 0) throw new Error(`gcc: ${r.stderr}`)
  fs.chmodSync(lib, 0o755)
  return lib
}

/**
 * A helper the member runs (python3, as the member) around a command whose stdout and stderr go to a pipe the helper
 * holds: it reads the pipe until the file GO appears, then stops reading and fills the pipe to the last byte (through a
 * second open of it, so that the command's own end stays blocking), writes FILLED and waits for the command.
 * `--stdin-line JSON` hands the command that line on a stdin kept open (a request to the engine).
 */
export const PIPE_FILLER = `import os, subprocess, sys, time
go, filled, args = sys.argv[1], sys.argv[2], sys.argv[3:]
line = None
if args[0] == '--stdin-line':
    line, args = args[1], args[2:]
if args[0] == '--':
    args = args[1:]
r, w = os.pipe()
os.set_blocking(r, False)
p = subprocess.Popen(args, stdin=subprocess.PIPE if line is not None else subprocess.DEVNULL, stdout=w, stderr=w)
if line is not None:
    p.stdin.write((line + '\\n').encode())
    p.stdin.flush()
while not os.path.exists(go) and p.poll() is None:
    try:
        data = os.read(r, 65536)
        if data:
            sys.stderr.buffer.write(data)
            sys.stderr.flush()
    except BlockingIOError:
        pass
    time.sleep(0.05)
if p.poll() is None:
    fd = os.open('/proc/self/fd/%d' % w, os.O_WRONLY | os.O_NONBLOCK)
    for size in (65536, 4096, 512, 64, 8, 1):
        try:
            while True:
                os.write(fd, b'x' * size)
        except BlockingIOError:
            pass
    open(filled, 'w').close()
    print('filled', flush=True)
sys.exit(p.wait())
`

/**
 * A helper the member runs (python3, as the member) that starts a command on a new pseudo-terminal, as at an
 * interactive shell (its controlling terminal: sudo then runs the engine the way it does for a person), reads its
 * output until the file GO appears, then types Ctrl-Z into the terminal, writes SUSPENDED and goes on reading.
 * `--stdin-line JSON` hands the command that line on a pipe kept open as its stdin (a request to the engine).
 */
export const PTY_SUSPENDER = `import os, pty, signal, sys, time
go, suspended, args = sys.argv[1], sys.argv[2], sys.argv[3:]
line = None
if args[0] == '--stdin-line':
    line, args = args[1], args[2:]
if args[0] == '--':
    args = args[1:]
if line is not None:
    ir, iw = os.pipe()
pid, master = pty.fork()
if pid == 0:
    # the terminal's session, with a shell's job control: the command in a process group of its own, in the foreground
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        os.tcsetpgrp(1, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        if line is not None:
            os.dup2(ir, 0)
            os.close(iw)
        os.execvp(args[0], args)
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    while True:
        _, status = os.waitpid(job, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
if line is not None:
    os.close(ir)
    os.write(iw, (line + '\\n').encode())
os.set_blocking(master, False)
def drain():
    try:
        data = os.read(master, 65536)
        if data:
            sys.stderr.buffer.write(data)
            sys.stderr.flush()
    except (BlockingIOError, OSError):
        pass
def ended():
    return os.waitpid(pid, os.WNOHANG)[0] != 0
gone = False
while not os.path.exists(go) and not gone:
    drain()
    gone = ended()
    time.sleep(0.05)
if not gone:
    os.write(master, b'\\x1a')
    open(suspended, 'w').close()
while not gone:
    drain()
    gone = ended()
    time.sleep(0.05)
`

/** the process's state letter (R, S, T for stopped, ...), or null when it is gone */
export function procState(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------------------------
// the GPU

/** root's own sessions on every free slice; returns their names (root holds them until freed) */
export function fillGpu(box: SharedBox, prefix: string): string[] {
  const names: string[] = []
  for (let i = 0; i < 8; i++) {
    const name = `${prefix}f${i}`
    const r = box.root(['up', 't4', '--no-container', '--name', name, '--json'])
    if (r.exitCode !== 0) {
      if (jsonOf(r)?.error?.code !== 'MIG_NO_FREE_SLOT') throw new Error(`filling the GPU: ${r.stdout}${r.stderr}`)
      return names
    }
    names.push(name)
  }
  throw new Error('the GPU never filled up')
}

export function downAsRoot(box: SharedBox, names: readonly string[]): void {
  if (names.length === 0) return
  const r = box.root(['down', ...names, '--json'])
  if (r.exitCode !== 0) throw new Error(`down ${names.join(' ')}: ${r.stdout}${r.stderr}`)
}

// ---------------------------------------------------------------------------------------------------------------
// the network

/**
 * A TCP listener on loopback, in a process of its own (the tests block their own event loop in spawnSync), that notes
 * the uid of every process that connects (the client socket's owner in /proc/net/tcp, read while it is connected) and
 * hangs up: an ssh "box" that tells whether root dialled it.
 */
export const UID_RECORDER = `import socket, sys
out = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, (host, port) = s.accept()
    uid = -1
    with open('/proc/net/tcp') as tcp:
        for line in tcp.read().splitlines()[1:]:
            cols = line.split()
            if cols[1] == '0100007F:%04X' % port:
                uid = int(cols[7])
                break
    with open(out, 'a') as f:
        f.write('%d\\n' % uid)
    c.close()
`

export async function uidRecorder(dir: string): Promise<{port: number; uids: () => number[]; close: () => Promise<void>}> {
  const script = path.join(dir, 'uid-recorder.py')
  const log = path.join(dir, 'uid-recorder.log')
  fs.writeFileSync(script, UID_RECORDER)
  fs.writeFileSync(log, '')
  const child = spawn('/usr/bin/python3', [script, log], {stdio: ['ignore', 'pipe', 'inherit']})
  let first = ''
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      first += d
      if (first.includes('\n')) resolve(Number(first.trim()))
    })
    child.on('exit', (code) => reject(new Error(`uid recorder exited ${code}`)))
  })
  const uids = () => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number)
  const close = () =>
    new Promise<void>((resolve) => {
      child.on('exit', () => resolve())
      child.kill('SIGKILL')
    })
  return {port, uids, close}
}

/** whether anything listens on `address`:`port` (ss) */
export function listening(address: string, port: number): boolean {
  const r = spawnSync('ss', ['-Hltn', `sport = :${port}`], {encoding: 'utf8'})
  return r.stdout.split('\n').some((l) => l.includes(`${address}:${port}`) || (address === '*' && l.includes(`:${port}`)))
}

/** the box's state directory, for a test that must look at what only root sees */
export const STATE = STATE_DIR
