import {emptyBook, heldSettings} from '../../../src/apply/gpu-book.js'

describe('heldSettings', () => {
  it('names only the sessions and holds that hold a GPU-wide value, not every session on the GPU', () => {
    const book = emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null)
    // sessions on MPS-shaped slices hold persistence and MIG mode, never the clock or the power limit
    book.leases.persistence = {original: false, value: true, holders: ['a-t4', 'b-t4', 'c-3090']}
    book.leases.clocks = {original: null, value: 1395, holders: ['c-3090', 'lease:slurm-job-7']}
    book.leases['power-limit'] = {original: 700, value: 350, holders: ['c-3090']}
    expect(heldSettings(book)).toEqual({clockMHz: 1395, powerLimitW: 350, holders: ['c-3090', 'lease:slurm-job-7']})
  })

  it('holds nothing on a GPU whose sessions took no GPU-wide value', () => {
    const book = emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null)
    book.leases['mig-mode'] = {original: false, value: true, holders: ['a-t4']}
    expect(heldSettings(book)).toEqual({holders: []})
  })
})
