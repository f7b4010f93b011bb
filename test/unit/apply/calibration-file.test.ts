import {chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {readCalibration, writeCalibration} from '../../../src/apply/calibration-file.js'
import type {Calibration} from '../../../src/host/calibration.js'
import {calibrationFile} from '../../../src/core/state-layout.js'
import {thrown} from '../support/thrown.js'
import {ENGINE_STATE_POLICY, SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

const CALIBRATION: Calibration = {
  version: 1,
  gpu: {model: 'h200_sxm', name: 'NVIDIA H200', uuid: 'GPU-cb3dfa52'},
  driver: '550.90.12',
  measuredAt: '2026-11-23T12:00:00.000Z',
  torch: '2.5.1',
  measured: {fp32Tflops: 52, bf16Tflops: 790, bandwidthGBs: 4300},
  peak: {fp32Tflops: 66.91, bf16Tflops: 989.4, bandwidthGBs: 4800},
  fractions: {fp32: 0.7772, bf16: 0.7985, bandwidth: 0.8958},
  samples: {smClockMHz: {min: 1755, median: 1980, max: 1980}, powerW: null, throttleReasons: ['sw_power_cap']},
}

let stateDir: string
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-calibration-'))
})
afterEach(() => rmSync(stateDir, {recursive: true, force: true}))

describe('calibration files', () => {
  it('round-trips under <state>/calibrations/<model>-<driver>.json', () => {
    const file = writeCalibration(stateDir, CALIBRATION, SANDBOX)
    expect(file).toBe(join(stateDir, 'calibrations', 'h200_sxm-550.90.12.json'))
    expect(readCalibration(stateDir, 'h200_sxm', '550.90.12', SANDBOX)).toEqual({file, calibration: CALIBRATION})
  })

  // the engine plans a member's up with the calibration it reads: a member's file there must never move the plan
  it('in the engine, refuses a calibration a member owns or a symlink planted in its place', () => {
    const file = writeCalibration(stateDir, CALIBRATION, SANDBOX)
    expect(readCalibration(stateDir, 'h200_sxm', '550.90.12', ENGINE_STATE_POLICY)?.calibration).toEqual(CALIBRATION)
    chownSync(file, 1234, 1234)
    expect(readCalibration(stateDir, 'h200_sxm', '550.90.12', SANDBOX)?.calibration).toEqual(CALIBRATION)
    expect(thrown(() => readCalibration(stateDir, 'h200_sxm', '550.90.12', ENGINE_STATE_POLICY)).code).toBe('UNSAFE_STATE_FILE')
    rmSync(file)
    const planted = join(stateDir, 'planted.json')
    writeFileSync(planted, JSON.stringify(CALIBRATION))
    symlinkSync(planted, file)
    expect(thrown(() => readCalibration(stateDir, 'h200_sxm', '550.90.12', ENGINE_STATE_POLICY)).code).toBe('UNSAFE_STATE_FILE')
  })

  it('finds nothing when the model was never calibrated', () => {
    expect(readCalibration(stateDir, 'h200_sxm', '550.90.12', SANDBOX)).toBeNull()
    writeCalibration(stateDir, CALIBRATION, SANDBOX)
    expect(readCalibration(stateDir, 'h100_sxm', '550.90.12', SANDBOX)).toBeNull()
  })

  it('refuses one taken under another driver, and recalibrating replaces it', () => {
    writeCalibration(stateDir, CALIBRATION, SANDBOX)
    const error = thrown(() => readCalibration(stateDir, 'h200_sxm', '560.35.03', SANDBOX))
    expect([error.code, error.exit]).toEqual(['CALIBRATION_STALE', 3])
    expect(error.message).toContain('h200_sxm-550.90.12.json')
    writeCalibration(stateDir, {...CALIBRATION, driver: '560.35.03'}, SANDBOX)
    expect(readdirSync(join(stateDir, 'calibrations'))).toEqual(['h200_sxm-560.35.03.json'])
    expect(readCalibration(stateDir, 'h200_sxm', '560.35.03', SANDBOX)?.calibration.driver).toBe('560.35.03')
  })

  it('refuses a file whose recorded driver is not the one its name says', () => {
    mkdirSync(join(stateDir, 'calibrations'))
    writeFileSync(calibrationFile(stateDir, 'h200_sxm', '560.35.03'), JSON.stringify(CALIBRATION))
    expect(thrown(() => readCalibration(stateDir, 'h200_sxm', '560.35.03', SANDBOX)).code).toBe('CALIBRATION_STALE')
  })

  it.each([
    ['not JSON', '{"version": 1,'],
    ['empty', ''],
    ['an unknown key', JSON.stringify({...CALIBRATION, extra: 1})],
    ['a missing key', JSON.stringify({...CALIBRATION, driver: undefined})],
    ['another version', JSON.stringify({...CALIBRATION, version: 2})],
    ['a negative fraction', JSON.stringify({...CALIBRATION, fractions: {...CALIBRATION.fractions, bf16: -1}})],
  ])('refuses a file with %s, naming it', (_, text) => {
    mkdirSync(join(stateDir, 'calibrations'))
    const file = calibrationFile(stateDir, 'h200_sxm', '550.90.12')
    writeFileSync(file, text)
    const error = thrown(() => readCalibration(stateDir, 'h200_sxm', '550.90.12', SANDBOX))
    expect([error.code, error.exit]).toEqual(['CALIBRATION_INVALID', 3])
    expect(error.message).toContain(file)
  })

  it('does not take a longer model key for this one', () => {
    writeCalibration(stateDir, {...CALIBRATION, gpu: {...CALIBRATION.gpu, model: 'h200_sxm_nvl'}, driver: '1.0'}, SANDBOX)
    expect(readCalibration(stateDir, 'h200_sxm', '550.90.12', SANDBOX)).toBeNull()
  })
})
