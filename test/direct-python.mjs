/**
 * Jest globalSetup. The simulators in test/sim are Python scripts started through `#!/usr/bin/env python3`,
 * hundreds of times a run. Where `python3` on PATH is a version manager's shim (pyenv's is a bash script that
 * costs ~70 ms a start, against ~12 ms for the interpreter), put the interpreter's own folder first on PATH, so
 * the test workers, the CLIs they start and the simulators those start find it directly: same python3, no shim.
 */
import {execFileSync} from 'node:child_process'
import {dirname} from 'node:path'

export default function directPython() {
  let interpreter
  try {
    interpreter = execFileSync('python3', ['-S', '-c', 'import sys; print(sys.executable)'], {encoding: 'utf8'}).trim()
  } catch {
    return // no python3: the tests that need it say so themselves
  }
  if (interpreter === '') return
  const folder = dirname(interpreter)
  const path = process.env.PATH ?? ''
  if (path.split(':')[0] !== folder) process.env.PATH = `${folder}:${path}`
}
