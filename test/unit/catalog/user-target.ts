/** A made-up user catalog entry (YAML, one list item) the catalog tests load. */
export const RTX_9090_YAML = `  - key: rtx_9090
    name: NVIDIA GeForce RTX 9090
    aliases: ['9090']
    arch: blackwell
    chip: GB202
    computeCapability: '12.0'
    smCount: 200
    boostClockMHz: 2500
    vramGB: 48
    memoryType: GDDR7
    bandwidthGBs: 2000
    l2CacheMB: 128
    fp32Tflops: 128
    fp16Tflops: 256
    bf16Tflops: 256
    tf32Tflops: 128
    fp8Tflops: 1024
    tdpW: 600
    source: my imagination
`
