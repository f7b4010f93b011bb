import {COSTUME_ENV} from '../core/names.js'
import {costumeEnv} from '../plan/costume-env.js'
import {comment, type ExportInput, headerLines, hostGpuOf, physicalMiBOf} from './export-input.js'
import {describeSettings, gpuWideSettings, leaseHoldArgv, leaseReleaseArgv} from './gpu-wide-lease.js'
import {shellLine, shellQuote} from '../core/shell-words.js'

export const SLURM_SCRIPTS = {
  prolog: '/etc/slurm/gpu-cosplay-prolog.sh',
  epilog: '/etc/slurm/gpu-cosplay-epilog.sh',
  taskProlog: '/etc/slurm/gpu-cosplay-task-prolog.sh',
} as const

/** Where each part goes; the marker line opens a part, so a strict reader (or csplit) can take them apart. */
export function partMarker(name: string): string {
  return `# ==> ${name} <==`
}

/** Slurm runs prologs in the job's environment: the holder and the session name carry the job id. */
const JOB_HOLDER = '"slurm-job-$SLURM_JOB_ID"'

/**
 * Slurm config for the plan: gres.conf, the slurm.conf lines (Gres/TRES typed by MIG profile, prologs) and
 * three scripts. Slurm schedules MIG devices that already exist and never partitions a GPU itself.
 */
export function renderSlurm(input: ExportInput): string {
  const {plan, layout} = input
  const settings = gpuWideSettings(plan, input.hostModel)
  // Slurm matches a MIG type as a substring of the "MIG Profile" slurmd logs (e.g. nvidia_h200_1g.35gb).
  const gresType = plan.mig?.profile ?? null
  const count = gresType && layout ? (layout.migDevices[gresType] ?? 1) : 1
  const gres = gresType ? `gpu:${gresType}:${count}` : 'gpu:1'
  const notes = [
    ...headerLines(input),
    '',
    ...(plan.mig
      ? [
          'Slurm does not partition MIG dynamically: it schedules the slices that exist. Lay each GPU out first',
          `with the same plan: gpu-cosplay plan ${plan.target.key} --on ${input.hostModel.key} -o mig-parted --label ${input.label} --out mig.yaml`,
          `  nvidia-mig-parted apply -f mig.yaml -c ${input.label}`,
        ]
      : [`${input.hostModel.name} has no MIG: jobs get a whole GPU.`]),
    "Then put each part below in place (merge the slurm.conf lines into the node's own NodeName line; the Gres",
    'count is per GPU, so multiply it by the GPUs of the node), and run',
    '  scontrol reconfigure    (a new Gres or GresTypes needs slurmctld and the slurmd restarted instead)',
    `Jobs ask for it with: srun --gres=${gresType ? `gpu:${gresType}:1` : 'gpu:1'} ...`,
    ...(settings
      ? [
          '',
          `The plan also needs ${describeSettings(settings)}, GPU-wide: the Prolog holds it with \`gpu-cosplay lease hold\``,
          'and the Epilog releases it; the lease restores the previous values when the last job on the GPU ends.',
          'Both need the gpu-cosplay CLI with the `lease` command on the node, and never fail the job.',
        ]
      : []),
  ]
  const slurmConf = [
    'GresTypes=gpu',
    `AccountingStorageTRES=gres/gpu${gresType ? `,gres/gpu:${gresType}` : ''}`,
    `NodeName=${input.nodeName} Gres=${gres}`,
    ...(settings ? [`Prolog=${SLURM_SCRIPTS.prolog}`, `Epilog=${SLURM_SCRIPTS.epilog}`] : []),
    `TaskProlog=${SLURM_SCRIPTS.taskProlog}`,
  ]
  const parts: [string, string[]][] = [
    ['gres.conf', ['AutoDetect=nvml']],
    ['slurm.conf', slurmConf],
  ]
  if (settings) {
    const hostGpu = hostGpuOf(input)
    parts.push([SLURM_SCRIPTS.prolog, neverFails([`${shellLine(leaseHoldArgv(hostGpu, settings))} --holder ${JOB_HOLDER}`])])
    parts.push([SLURM_SCRIPTS.epilog, neverFails([`${shellLine(leaseReleaseArgv(hostGpu))} --holder ${JOB_HOLDER}`])])
  }
  parts.push([SLURM_SCRIPTS.taskProlog, taskProlog(input)])
  return `${comment(notes)}\n${parts.map(([name, lines]) => `\n${partMarker(name)}\n${lines.join('\n')}\n`).join('')}`
}

/** A prolog that exits non-zero drains the node; a failed lease only costs fidelity, so it must not. */
function neverFails(commands: readonly string[]): string[] {
  return ['#!/bin/sh', ...commands.map((c) => `${c} || true`), 'exit 0']
}

/** Slurm reads `export NAME=value` lines from a TaskProlog's stdout into the task's environment, value to the end of the line. */
function taskProlog(input: ExportInput): string[] {
  const env = costumeEnv(input.plan, {hasTf32: input.target.tf32Tflops !== null}, physicalMiBOf(input), 'SESSION')
  const lines = Object.entries(env).map(([name, value]) =>
    name === COSTUME_ENV.session ? `echo "export ${name}=slurm-job-$SLURM_JOB_ID"` : `printf '%s\\n' ${shellQuote(`export ${name}=${value}`)}`,
  )
  return ['#!/bin/sh', ...lines]
}
