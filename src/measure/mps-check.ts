/**
 * verify's MPS check, the pure part: what a probe in one of the session's shells saw (the pipe directory a CUDA client
 * would use, the daemon's answers there) held to the plan's percentage and pinned limit. The probe itself runs in an
 * ssh login shell and an ssh command (verify-mps.ts); the verdict is made here only.
 */
import type {MpsWanted} from '../container/mps-readiness.js'
import type {VerdictCheck} from '../core/check.js'

/** One answer of the control binary: its exit code and its output on one line. */
export type MpsAnswer = {readonly exitCode: number; readonly text: string}

/** What the probe saw in one shell; `error` when it did not run at all. */
export type MpsProbe = {
  readonly pipeDirectory: string | null
  readonly control: string | null
  readonly threadPercentage: MpsAnswer | null
  readonly pinnedMemLimit: MpsAnswer | null
  readonly error?: string
}

/**
 * sh, for whatever the session user's shell runs: the pipe directory, the control binary on PATH, and the daemon's
 * answers there. A tab-separated line each.
 */
export const MPS_PROBE = [
  `printf 'pipe\\t%s\\t%s\\n' "\${CUDA_MPS_PIPE_DIRECTORY+set}" "\${CUDA_MPS_PIPE_DIRECTORY-}"`,
  `c=$(command -v nvidia-cuda-mps-control) || c=`,
  `printf 'control\\t%s\\n' "$c"`,
  `[ -n "$c" ] || exit 0`,
  `for q in get_default_active_thread_percentage 'get_default_device_pinned_mem_limit 0'; do`,
  `  out=$(printf '%s\\n' "$q" | "$c" 2>&1); rc=$?`,
  `  printf 'answer\\t%s\\t%s\\t%s\\n' "\${q%% *}" "$rc" "$(printf '%s' "$out" | tr '\\t\\n' '  ')"`,
  `done`,
].join('\n')

export function parseMpsProbe(stdout: string): MpsProbe {
  const probe: {-readonly [K in keyof MpsProbe]: MpsProbe[K]} = {pipeDirectory: null, control: null, threadPercentage: null, pinnedMemLimit: null}
  for (const line of stdout.split('\n')) {
    const [kind, ...fields] = line.split('\t')
    if (kind === 'pipe') probe.pipeDirectory = fields[0] === 'set' ? (fields[1] ?? '') : null
    else if (kind === 'control') probe.control = fields[0] || null
    else if (kind === 'answer') {
      const answer = {exitCode: Number(fields[1]), text: (fields[2] ?? '').trim()}
      if (fields[0] === 'get_default_active_thread_percentage') probe.threadPercentage = answer
      if (fields[0] === 'get_default_device_pinned_mem_limit') probe.pinnedMemLimit = answer
    }
  }
  return probe
}

const UNIT_MIB = {K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024} as const

/**
 * `get_default_device_pinned_mem_limit`'s answer in MiB: `2G`, `900M`, maybe with decimals. The driver rounds down
 * (whole GiB from 1 GiB up), so the limit lies in [mib, mib + resolutionMiB). Null when it is no such amount.
 */
export function parsePinnedMemLimit(text: string): {mib: number; resolutionMiB: number} | null {
  const match = /^(\d+)(?:\.(\d+))?\s*([KMGT])i?B?$/i.exec(text.trim())
  if (!match) return null
  const unit = UNIT_MIB[match[3].toUpperCase() as keyof typeof UNIT_MIB]
  const decimals = match[2] ?? ''
  return {mib: Number(`${match[1]}.${decimals || '0'}`) * unit, resolutionMiB: unit / 10 ** decimals.length}
}

/** Whether the driver's answer shows the planned limit, exactly within the unit's rounding. */
export function isPinnedLimit(shown: {mib: number; resolutionMiB: number}, plannedMiB: number): boolean {
  const epsilon = 1e-9 * Math.max(1, plannedMiB)
  return shown.mib <= plannedMiB + epsilon && plannedMiB < shown.mib + shown.resolutionMiB - epsilon
}

/** What is wrong with one shell's view; empty when a CUDA client there reaches the daemon with the plan's limits. */
export function mpsProblems(wanted: NonNullable<MpsWanted>, probe: MpsProbe): string[] {
  if (probe.error !== undefined) return [`the probe did not run: ${probe.error}`]
  if (probe.pipeDirectory === null || probe.pipeDirectory === '')
    return ["CUDA_MPS_PIPE_DIRECTORY is not set: a CUDA client would not find the session's daemon"]
  if (probe.control === null) return ['no nvidia-cuda-mps-control on PATH to ask the daemon']
  const pct = probe.threadPercentage
  if (pct === null || pct.exitCode !== 0) return [`no MPS daemon answers in ${probe.pipeDirectory}${pct?.text ? `: ${pct.text}` : ''}`]
  const problems: string[] = []
  const percentage = Number(pct.text)
  if (pct.text === '' || !Number.isFinite(percentage) || Math.abs(percentage - wanted.activeThreadPercentage) >= 0.05) {
    problems.push(`active thread percentage is ${pct.text || 'not given'}, planned ${wanted.activeThreadPercentage}`)
  }
  const limit = probe.pinnedMemLimit
  const shown = limit && limit.exitCode === 0 ? parsePinnedMemLimit(limit.text) : null
  if (shown === null || shown.mib === 0) {
    problems.push(
      `no pinned device memory limit (get_default_device_pinned_mem_limit 0: ${limit?.text || 'no answer'}), planned ${wanted.pinnedMemLimitMiB} MiB`,
    )
  } else if (!isPinnedLimit(shown, wanted.pinnedMemLimitMiB)) {
    problems.push(`pinned device memory limit is ${limit!.text}, planned ${wanted.pinnedMemLimitMiB} MiB`)
  }
  return problems
}

/** The shells verify probes, in order: the first is the one the others' pipe directory must equal. */
export type ProbedShell = {readonly check: string; readonly label: string; readonly probe: MpsProbe}

/** verify's MPS checks, one a shell: the login shell's, then the command's. */
export const MPS_CHECK_NAMES = {login: 'mps.login_shell', command: 'mps.command'} as const

/** A session planned without MPS: both checks SKIP, saying why. */
export function mpsChecksSkipped(): VerdictCheck[] {
  const detail = 'planned without MPS (up --no-mps, or no MPS control binary on the host): no daemon to reach'
  return Object.values(MPS_CHECK_NAMES).map((name) => ({name, status: 'SKIP', detail}))
}

/** One check a shell: PASS when a CUDA client started there reaches the daemon with the plan's limits. */
export function mpsChecks(wanted: NonNullable<MpsWanted>, shells: readonly ProbedShell[]): VerdictCheck[] {
  const first = shells[0]?.probe.pipeDirectory
  return shells.map(({check, label, probe}, i) => {
    const problems = mpsProblems(wanted, probe)
    if (i > 0 && problems.length === 0 && probe.pipeDirectory !== first) {
      problems.push(`CUDA_MPS_PIPE_DIRECTORY is ${probe.pipeDirectory} here, ${first ?? 'unset'} in ${shells[0].label}`)
    }
    return problems.length > 0
      ? {name: check, status: 'FAIL', detail: `${label}: ${problems.join('; ')}`}
      : {
          name: check,
          status: 'PASS',
          detail: `${label}: ${probe.threadPercentage!.text}% active threads, pinned limit ${probe.pinnedMemLimit!.text} (planned ${wanted.activeThreadPercentage}%, ${wanted.pinnedMemLimitMiB} MiB), CUDA_MPS_PIPE_DIRECTORY=${probe.pipeDirectory}`,
        }
  })
}
