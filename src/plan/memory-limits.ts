import type {HostModel, Target} from '../catalog/types.js'

/**
 * Memory as the card has it. A real card's driver keeps part of its VRAM (an RTX 3090 reports 24268 MiB to CUDA of its
 * 24576) and a program's CUDA context comes out of the rest. Under MPS the pinned device-memory limit counts the
 * client's context too, so a limit of what the card reports leaves a program about what the card leaves it: the
 * context comes out of both. Where the card's context and this host's MPS client overhead are both known, the limit
 * moves by their difference.
 */
export type MemoryPlan = {
  /** the card's VRAM as nvidia-smi shows it (MiB): the costume's total in nvidia-smi and NVML */
  readonly vramMiB: number
  /** what CUDA reports as the device's total (torch total_memory) on the card: its VRAM less the driver's reserve */
  readonly cudaTotalMiB: number
  /** measured: a source gives the card's figure; assumed: none does, so it is taken as the VRAM */
  readonly cudaTotalBasis: 'measured' | 'assumed'
  /** the limit the driver enforces for the session: the MPS pinned limit, else its MIG slice; null: the costume only */
  readonly hardLimitMiB: number | null
  readonly hardLimitBy: 'mps' | 'mig-slice' | null
  /** what torch's allocator (and CuPy, JAX) may hold: the costume's cap, never above the hard limit */
  readonly allocatorCapMiB: number
  /** what a program can allocate, as planned: what the card leaves it after its context */
  readonly allocatableMiB: number
  /** the CUDA context with torch on the card, and what an MPS client cannot allocate of its limit on this host (null: unknown) */
  readonly cardContextMiB: number | null
  readonly hostMpsOverheadMiB: number | null
  readonly note: string
}

/**
 * @param vramCapMiB the target's VRAM in MiB, or the slice's where the slice is smaller
 * @param sliceMiB the memory of the slice (or whole GPU) the session runs on
 */
export function memoryPlan(target: Target, model: HostModel, vramCapMiB: number, sliceMiB: number, options: {mps: boolean; migSlice: boolean}): MemoryPlan {
  const reported = target.reference?.totalMemoryMiB?.value
  const cudaTotalMiB = Math.min(Math.floor(reported ?? vramCapMiB), vramCapMiB)
  const cardContextMiB = target.reference?.contextMiB?.value ?? null
  const hostMpsOverheadMiB = model.mpsClientOverheadMiB?.value ?? null
  const base =
    reported === undefined ? `the card's ${vramCapMiB} MiB (what it reports to CUDA is not known)` : `the ${cudaTotalMiB} MiB the card reports to CUDA`
  if (options.mps) {
    const adjust = cardContextMiB !== null && hostMpsOverheadMiB !== null ? cardContextMiB - hostMpsOverheadMiB : 0
    const pinned = Math.min(Math.round(cudaTotalMiB - adjust), sliceMiB)
    const overhead = hostMpsOverheadMiB ?? cardContextMiB
    return {
      vramMiB: vramCapMiB,
      cudaTotalMiB,
      cudaTotalBasis: reported === undefined ? 'assumed' : 'measured',
      hardLimitMiB: pinned,
      hardLimitBy: 'mps',
      allocatorCapMiB: pinned,
      allocatableMiB: overhead === null ? pinned : pinned - overhead,
      cardContextMiB,
      hostMpsOverheadMiB,
      note:
        `MPS pinned limit ${pinned} MiB: ${base}` +
        (adjust !== 0
          ? `, ${adjust > 0 ? 'less' : 'plus'} ${Math.abs(adjust)} MiB (the card's context ${cardContextMiB} vs this host's MPS client ${hostMpsOverheadMiB})`
          : '') +
        `; the context and library buffers come out of it as on the card${overhead === null ? '' : ` (about ${overhead} MiB here)`}`,
    }
  }
  // no MPS: the costume's allocator cap is the only limit below the slice, and the context is outside it
  const context = cardContextMiB ?? hostMpsOverheadMiB ?? 0
  const cap = cudaTotalMiB - context
  return {
    vramMiB: vramCapMiB,
    cudaTotalMiB,
    cudaTotalBasis: reported === undefined ? 'assumed' : 'measured',
    hardLimitMiB: options.migSlice ? sliceMiB : null,
    hardLimitBy: options.migSlice ? 'mig-slice' : null,
    allocatorCapMiB: cap,
    allocatableMiB: cap,
    cardContextMiB,
    hostMpsOverheadMiB,
    note:
      `no MPS: torch's allocator (and CuPy, JAX) is capped at ${cap} MiB, ${base}` +
      (context > 0 ? ` less a ${context} MiB context` : '') +
      `; only the costume enforces it, and other CUDA programs see ${options.migSlice ? `the slice's ${sliceMiB} MiB` : 'the whole GPU'}`,
  }
}
