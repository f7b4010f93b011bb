/**
 * Catalog models. Field names are the YAML keys in catalog/*.yaml and the JSON keys of `ls`/`info`/`plan`.
 * Throughput is DENSE (no 2:4 sparsity); tensor figures are FP16/BF16 inputs with FP32 accumulate.
 */
export const ARCHS = ['volta', 'turing', 'ampere', 'ada', 'hopper', 'blackwell'] as const
export type Arch = (typeof ARCHS)[number]

/** A GPU the tool can imitate (catalog/gpus.yaml, or a user file in catalog.d/). */
export type Target = {
  readonly key: string
  /** display name, also what the costume reports (torch, pynvml, nvidia-smi), e.g. "NVIDIA GeForce RTX 3090" */
  readonly name: string
  readonly aliases: readonly string[]
  readonly arch: Arch
  readonly chip: string
  readonly computeCapability: string
  readonly smCount: number
  readonly boostClockMHz: number
  /** advertised capacity in GB; the costume caps at the same number of GiB, as nvidia-smi shows such a card */
  readonly vramGB: number
  readonly memoryType: string
  readonly bandwidthGBs: number
  readonly l2CacheMB: number | null
  readonly fp32Tflops: number
  /** FP16 tensor with FP32 accumulate; null when the card has no tensor cores */
  readonly fp16Tflops: number | null
  /** BF16 tensor (FP32 accumulate); null when the card has no BF16 (Volta, Turing) */
  readonly bf16Tflops: number | null
  readonly tf32Tflops: number | null
  readonly fp8Tflops: number | null
  readonly tdpW: number
  readonly source: string
  readonly notes?: string
  /** what the card really reaches in a plain GEMM / copy benchmark, as a fraction of the figures above (sourced; optional) */
  readonly achievedFraction?: AchievedFraction
}

/** Measured / datasheet per axis, from a published benchmark named in `source`. */
export type AchievedFraction = {
  readonly fp32?: number
  readonly bf16?: number
  readonly bandwidth?: number
  readonly source: string
}

/** One `nvidia-smi mig -lgip` row, as a catalog host model states it. */
export type MigProfileSpec = {
  /** without the "MIG " prefix, e.g. "1g.18gb" or "1g.18gb+me" */
  readonly name: string
  readonly id: number
  readonly smCount: number
  readonly memoryGiB: number
  readonly memorySlices: number
  readonly maxInstances: number
}

/** A GPU the tool can run on (catalog/hosts.yaml). */
export type HostModel = {
  readonly key: string
  readonly name: string
  /** names nvidia-smi prints for this model, used to recognise a probed GPU */
  readonly smiNames: readonly string[]
  readonly aliases: readonly string[]
  readonly arch: Arch
  readonly smCount: number
  readonly clockMinMHz: number
  readonly clockMaxMHz: number
  /** NVIDIA quotes tensor peaks at a lower clock than FP32 (H100/H200: 1830 vs 1980 MHz); null = same as max */
  readonly tensorClockMaxMHz: number | null
  readonly powerMinW: number
  readonly powerMaxW: number
  readonly powerDefaultW: number
  readonly bandwidthGBs: number
  readonly memoryGiB: number
  readonly fp32FlopsPerSmClk: number
  readonly bf16FlopsPerSmClk: number
  /** PCI device ids as nvidia-smi -q prints them ("0x233510DE"), for mig-parted's device-filter; absent where unsourced */
  readonly pciDeviceIds?: readonly string[]
  readonly mig: {
    readonly memorySlices: number
    readonly computeSlices: number
    readonly profiles: readonly MigProfileSpec[]
  } | null
  readonly source: string
  readonly notes?: string
}

export type Catalog = {
  readonly targets: readonly Target[]
  readonly hosts: readonly HostModel[]
  /** files that contributed, for error messages and `doctor` */
  readonly files: readonly string[]
}
