#!/usr/bin/env node
// ls, info and plan --on first try dist/fast.js, which runs them without loading oclif (most of their start-up
// time); it hands anything it does not fully handle (help, errors, other flags) to the real CLI below.
const argv = process.argv.slice(2)
const handled = ['ls', 'info', 'plan'].includes(argv[0]) && !process.env.GPU_COSPLAY_NO_FAST && (await import('../dist/fast.js')).runFast(argv)
if (!(await handled)) {
  const {execute} = await import('../dist/cli.js')
  await execute({dir: import.meta.url})
}
