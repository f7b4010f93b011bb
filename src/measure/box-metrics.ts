/**
 * `gpu-cosplay metrics`: the state `status` reads, as Prometheus series in base units (bytes, FLOP/s, hertz,
 * watts). A fresh registry per read, so a session that ended has no series left behind. Labels carry names,
 * owners, targets and profiles only: nothing of a session's environment or container.
 */
import {Gauge, Registry} from 'prom-client'

import type {HostView} from '../client/read-host-status.js'

const MiB = 1024 * 1024
const AXES = ['fp32_flops', 'bf16_flops', 'bandwidth_bytes_per_second'] as const

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE

/** The text exposition of one read of the box. */
export async function renderMetrics(view: HostView): Promise<string> {
  const registry = new Registry()
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Gauge<L>({name: `gpu_cosplay_${name}`, help, labelNames: [...labelNames], registers: [registry]})

  const info = gauge('session_info', 'A gpu-cosplay session (1): who owns it, what it imitates, on which GPU and MIG profile (full: the whole GPU)', [
    'session',
    'owner',
    'target',
    'gpu',
    'slice',
  ])
  const sms = gauge('session_sms', 'SMs the session can use: its MIG slice, or fewer under MPS', ['session'])
  const memoryLimit = gauge(
    'session_memory_limit_bytes',
    "The memory limit the driver enforces for the session (its MPS pinned limit, else its MIG slice); without one, the costume's VRAM cap",
    ['session'],
  )
  const memoryUsed = gauge('session_memory_used_bytes', 'Memory the compute apps of its MIG instance use (nvidia-smi)', ['session'])
  const expected = gauge('session_expected', 'What the plan expects of the session, per axis (FLOP/s, bytes/s)', ['session', 'axis'])
  const target = gauge('session_target', "The imitated GPU's figure, per axis (FLOP/s, bytes/s)", ['session', 'axis'])
  const timeLeft = gauge('session_time_left_seconds', 'Seconds until the session ends by itself (its TTL; absent: no end)', ['session', 'owner'])
  const idle = gauge('session_idle_seconds', 'Seconds since the session last ran a compute process of its own or saw an ssh login, as the reaper saw', [
    'session',
    'owner',
  ])
  const queued = gauge('queue_waiting', 'up --wait requests waiting for a slice', [])
  const gpuSessions = gauge('gpu_sessions', 'gpu-cosplay sessions (up) on the GPU', ['gpu'])
  const slicesFree = gauge('gpu_memory_slices_free', 'MIG memory slices no GPU instance occupies (absent with MIG off)', ['gpu'])
  const power = gauge('gpu_power_limit_watts', 'The power limit in force on the GPU', ['gpu'])
  const clock = gauge('gpu_clock_locked_hertz', 'The graphics clock gpu-cosplay locked the GPU at (absent when unlocked)', ['gpu'])
  const mig = gauge('gpu_mig_enabled', 'MIG mode is on (1) or off (0)', ['gpu'])

  gauge('gpus_read', 'Whether nvidia-smi could be read (1) or not (0: no GPU series, sessions from the records only)', []).set(view.error === undefined ? 1 : 0)

  queued.set(view.queue?.length ?? 0)
  const ups = view.sessions.filter((s) => s.kind === 'up')
  for (const s of ups) {
    const session = s.name
    info.set({session, owner: s.owner, target: s.target ?? '', gpu: s.gpuIndex === null ? '' : String(s.gpuIndex), slice: s.mig?.profile ?? 'full'}, 1)
    if (s.memoryUsedMiB !== null) memoryUsed.set({session}, s.memoryUsedMiB * MiB)
    if (s.timeLeftMs !== null) timeLeft.set({session, owner: s.owner}, Math.round(s.timeLeftMs / 1000))
    idle.set({session, owner: s.owner}, Math.round(s.idleMs / 1000))
    const sh = s.shaping
    if (!sh) continue
    sms.set({session}, sh.smCount)
    memoryLimit.set({session}, (sh.hardLimitMiB ?? sh.vramCapMiB) * MiB)
    const values = {
      expected: [perSecond(sh.expected.fp32Tflops, 1e12), perSecond(sh.expected.bf16Tflops, 1e12), perSecond(sh.expected.bandwidthGBs, 1e9)],
      target: [
        perSecond(sh.target.fp32Tflops, 1e12),
        sh.target.bf16Tflops === null ? null : perSecond(sh.target.bf16Tflops, 1e12),
        perSecond(sh.target.bandwidthGBs, 1e9),
      ],
    }
    AXES.forEach((axis, i) => {
      expected.set({session, axis}, values.expected[i])
      const t = values.target[i]
      if (t !== null) target.set({session, axis}, t)
    })
  }
  for (const g of view.gpus) {
    const gpu = String(g.index)
    // a spread session counts on every GPU one of its ranks is on
    gpuSessions.set({gpu}, ups.filter((s) => s.gpuUuid === g.uuid || (s.ranks ?? []).some((r) => r.gpuIndex === g.index)).length)
    if (g.memorySlices !== null) slicesFree.set({gpu}, g.freeMemorySlices.length)
    if (g.powerLimitW !== null) power.set({gpu}, g.powerLimitW)
    if (g.clockLockedMHz !== null) clock.set({gpu}, g.clockLockedMHz * 1e6)
    if (g.migEnabled !== null) mig.set({gpu}, g.migEnabled ? 1 : 0)
  }
  return registry.metrics()
}

/** TFLOPS or GB/s in base units, whole (8.1 TFLOPS is 8100000000000, not 8099999999999.999) */
export function perSecond(value: number, scale: number): number {
  return Math.round(value * scale)
}
