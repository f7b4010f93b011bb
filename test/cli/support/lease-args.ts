/** `lease hold|release` argv for the CLI tests */
export const hold = (holder: string, ...values: string[]) => ['lease', 'hold', '--host-gpu', '0', ...values, '--holder', holder]
export const release = (holder: string) => ['lease', 'release', '--host-gpu', '0', '--holder', holder]
export const HOLD_A = hold('slurm-job-42', '--clock-mhz', '1395', '--power-limit-w', '350')

/** the flags of each call, e.g. "-lgc" */
export const flagsOf = (calls: string[][]) => calls.map((argv) => argv.filter((a) => a.startsWith('-') && a !== '-i').join(' '))
