import {describe, expect, it} from '@jest/globals'

import {renderBox, terminalStyle} from '../../../src/render/render-box.js'
import type {HostView} from '../../../src/client/read-host-status.js'

const view = (gpu: Record<string, unknown>): HostView =>
  ({
    gpus: [{index: 0, uuid: 'GPU-1', name: 'NVIDIA H200', migEnabled: true, leases: {}, orphanInstances: [], ...gpu}],
    sessions: [],
    stateDir: '/s',
    sharedStateDir: true,
    containers: {reachable: true, reason: null, orphans: []},
  }) as unknown as HostView

describe('renderBox', () => {
  it('an instance no session owns is drawn as "? GI N" over its slices', () => {
    const lines = renderBox(
      view({
        instances: [{gpuInstanceId: 3, profile: '3g.71gb', owner: null, placement: {start: 0, size: 4}}],
        memorySlices: 8,
        freeMemorySlices: [4, 5, 6, 7],
        largestFreeProfile: '3g.71gb',
        powerLimitW: 700,
        clockLockedMHz: null,
      }),
    )
    expect(lines).toContain('  | ? GI 3                            | free   | free   | free   | free   |')
    expect(lines).toContain('  free: slices 4-7; largest free profile: 3g.71gb')
  })

  it('a --host box of an earlier version (no placement): its instances a line each, as before', () => {
    const lines = renderBox(view({instances: [{gpuInstanceId: 3, profile: '3g.71gb', owner: 's1'}]}))
    expect(lines.slice(0, 2)).toEqual(['GPU 0: NVIDIA H200 GPU-1  MIG on', '  GI 3 3g.71gb: s1'])
  })

  it('colour only on a terminal, and not with NO_COLOR', () => {
    expect(terminalStyle({isTTY: true, columns: 120}, {})).toEqual({cols: 120, color: true})
    expect(terminalStyle({isTTY: true, columns: 120}, {NO_COLOR: '1'})).toEqual({cols: 120, color: false})
    expect(terminalStyle({isTTY: false}, {})).toEqual({cols: 80, color: false})
  })
})
