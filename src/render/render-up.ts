import type {UpContainer} from '../client/up-container.js'
import type {UpResult} from '../client/up-session.js'
import {shellQuote} from '../core/shell-words.js'

/** The text view of `up`: the slice and its settings, then how to connect (or what to export), then how to end it. */
export function renderUp(r: UpResult): string {
  const slice = r.mig ? `MIG ${r.mig.profile} (GI ${r.mig.gpuInstanceId}, CI ${r.mig.computeInstanceId}) ${r.mig.uuid}` : 'whole GPU'
  const power = r.powerLimitW === null ? 'as found' : `${r.powerLimitW} W`
  const spread = new Set((r.ranks ?? []).map((k) => k.gpuIndex)).size > 1
  const lines = [
    `Session ${r.name}: ${r.target.name} on ${gpusOf(r)}`,
    `  slice:  ${slice}`,
    ...(r.ranks
      ? [
          `  ranks:  ${r.ranks.length} devices, each wearing the costume with its own slice and MPS daemon:`,
          ...r.ranks.map(
            (k) =>
              `    cuda:${k.rank}  ${k.uuid}${k.gpuInstanceId === null ? '' : ` (GI ${k.gpuInstanceId}, CI ${k.computeInstanceId})`}${spread ? ` on GPU ${k.gpuIndex}` : ''}`,
          ),
          `  link:   ${r.plan.ranks!.link.note}`,
        ]
      : []),
    `  clock:  ${r.clockMHz === null ? 'unlocked' : `${r.clockMHz} MHz`}   power: ${power}   VRAM cap: ${r.vramCapGiB} GiB`,
    r.mps
      ? `  MPS:    ${r.mps.activeThreadPercentage}% active threads = ${r.mps.smCount} SMs, ${r.mps.pinnedMemLimitMiB} MiB pinned (${r.mps.pipeDirectory})`
      : "  MPS:    not used (no nvidia-cuda-mps-control on this host): the VRAM cap is the costume's, for torch/JAX/CuPy only",
    `  GPU-wide: ${r.gpuWide.reason}`,
    '',
    ...(r.container
      ? renderContainer(r.container, r.name)
      : ['For your own workload (the costume hooks read these):', ...Object.entries(r.env).map(([k, v]) => `  export ${k}=${shellQuote(v)}`)]),
    '',
    `End it with: gpu-cosplay down ${r.name}`,
  ]
  for (const w of r.warnings) lines.push(`! ${w}`)
  for (const n of r.notes) lines.push(`note: ${n}`)
  return lines.join('\n')
}

function renderContainer(c: UpContainer, session: string): string[] {
  const root = c.sudo
    ? 'you have sudo there (up --sudo): root inside, and over everything mounted into it'
    : c.unprivileged
      ? `nothing runs as root there (your own image runs as ${c.user}, sessions through docker exec)`
      : 'no sudo, no setuid: nothing you run there can become root'
  const lines = [`Container ${c.name} (${c.image}), /workspace = ${c.workspace ?? '-'}`, `  root:   ${root}`, '', 'Connect:', `  ${c.connect.command}`]
  if (c.connect.ssh) lines.push(`  ${c.connect.ssh}`)
  else if (c.sshPort !== null)
    lines.push(`  for VS Code Remote-SSH and plain ssh: gpu-cosplay ssh-config ${session} --install, then ssh gpu-cosplay-${session}`)
  else lines.push('  (the image has no sshd: gpu-cosplay ssh and exec go through docker exec)')
  if (c.connect.sshConfig)
    lines.push(
      '',
      'For VS Code Remote-SSH, add to ~/.ssh/config (or: gpu-cosplay ssh-config NAME >> ~/.ssh/config):',
      ...c.connect.sshConfig.split('\n').map((l) => `  ${l}`),
    )
  return lines
}

/** The GPU the session is on, or (up --count N spread) each GPU its ranks are on. */
function gpusOf(r: UpResult): string {
  const gpus = [...new Set((r.ranks ?? []).map((k) => k.gpuIndex))]
  return gpus.length > 1 ? `GPUs ${gpus.join(', ')}` : `GPU ${r.hostGpu.index}`
}
