import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {migModeChange} from '../../../src/host/gpu-control.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

describe('migModeChange: what -mig 1|0 says of itself', () => {
  it('reads the pending warnings captured from real drivers as pending', () => {
    expect(migModeChange(fixture('a100-pcie-80gb__mig-1-pending-in-use-by-another-client.txt'))).toBe('pending')
    expect(migModeChange(fixture('a100-vm-passthrough__mig-1-pending-enable-not-supported.txt'))).toBe('pending')
  })

  it('reads the confirmation lines', () => {
    expect(migModeChange('Enabled MIG Mode for GPU 00000000:18:00.0\nAll done.\n')).toBe('enabled')
    expect(migModeChange('Disabled MIG Mode for GPU 00000000:18:00.0\nAll done.\n')).toBe('disabled')
  })

  it('calls anything else unknown, so the caller reads the GPU instead', () => {
    expect(migModeChange('All done.\n')).toBe('unknown')
    expect(migModeChange('')).toBe('unknown')
  })
})
