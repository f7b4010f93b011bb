#!/usr/bin/env node
// ls, info and plan --on first try dist/fast.js, which runs them without loading oclif (most of their start-up
// time); it hands anything it does not fully handle (help, errors, other flags) to the real CLI below.
import {existsSync} from 'node:fs'

const argv = process.argv.slice(2)
// On a box set up with `gpu-cosplay system install`, a member's command may run in the root engine instead
if (process.env.GPU_COSPLAY_ENGINE || existsSync('/etc/gpu-cosplay/config.yaml')) {
  const exit = await (await import('../dist/engine-route.js')).routeThroughEngine(argv)
  if (exit !== null) process.exit(exit)
}
// `up`'s first look at the GPUs (read-only) runs while the rest of the CLI loads; a member's up starts the engine instead
if (argv[0] === 'up') {
  if (process.env.GPU_COSPLAY_ENGINE === 'member') (await import('../dist/engine-client.js')).startEarlyEngineFor(argv)
  const early = await import('../dist/first-listing.js')
  if (early.upReadsLocalGpu(argv, process.env)) early.startEarlyListing()
}
const handled = ['ls', 'info', 'plan'].includes(argv[0]) && !process.env.GPU_COSPLAY_NO_FAST && (await import('../dist/fast.js')).runFast(argv)
if (!(await handled)) {
  const {execute} = await import('../dist/cli.js')
  await execute({dir: import.meta.url})
}
