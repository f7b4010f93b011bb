/**
 * The default image, pinned: its labels must be this version's, and through the engine its ID the one the engine
 * built (a root-owned file that only root may write; any other file pins nothing).
 */
import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'
import {chmodSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {assertCosplayImage, assertPinnedImage, pinImage, readPinnedImages} from '../../../src/container/image-pin.js'
import type {ImageInfo} from '../../../src/container/runtime.js'

const isRoot = process.getuid?.() === 0
const image = (id: string, labels: Record<string, string>) => ({id, labels}) as unknown as ImageInfo
const ours = image('sha256:1111', {'io.gpu-cosplay.image': '1', 'io.gpu-cosplay.version': '1.2.0'})

let state: string
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'gpu-cosplay-pin-'))
})
afterEach(() => rmSync(state, {recursive: true, force: true}))

describe('assertCosplayImage', () => {
  it("takes an image with this version's labels, and refuses any other under the default tag", () => {
    expect(() => assertCosplayImage(ours, 'gpu-cosplay:1.2.0', '1.2.0')).not.toThrow()
    for (const other of [image('sha256:2', {}), image('sha256:3', {'io.gpu-cosplay.image': '1', 'io.gpu-cosplay.version': '1.1.0'})]) {
      expect(() => assertCosplayImage(other, 'gpu-cosplay:1.2.0', '1.2.0')).toThrow(expect.objectContaining({code: 'IMAGE_NOT_COSPLAY', exit: 5}))
    }
  })
})

describe('the engine pins the image it built', () => {
  ;(isRoot ? it : it.skip)('a build recorded by root lets exactly that ID through', () => {
    pinImage(state, 'gpu-cosplay:1.2.0', 'sha256:1111')
    expect(readPinnedImages(state)).toEqual({'gpu-cosplay:1.2.0': 'sha256:1111'})
    expect(() => assertPinnedImage(state, 'gpu-cosplay:1.2.0', ours)).not.toThrow()
    // someone with Docker access tagged another image gpu-cosplay:1.2.0 (labels copied)
    const moved = image('sha256:2222', ours.labels as Record<string, string>)
    expect(() => assertPinnedImage(state, 'gpu-cosplay:1.2.0', moved)).toThrow(expect.objectContaining({code: 'IMAGE_NOT_PINNED', exit: 5}))
  })

  it('nothing recorded: refused, with the build as the fix', () => {
    let thrown: any = null
    try {
      assertPinnedImage(state, 'gpu-cosplay:1.2.0', ours)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toMatchObject({code: 'IMAGE_NOT_PINNED', exit: 5})
    expect(thrown.fix.join(' ')).toContain('gpu-cosplay build')
  })

  it('a file others may write pins nothing', () => {
    const file = join(state, 'images.json')
    writeFileSync(file, JSON.stringify({version: 1, images: {'gpu-cosplay:1.2.0': 'sha256:1111'}}))
    chmodSync(file, 0o666)
    expect(readPinnedImages(state)).toEqual({})
    expect(() => assertPinnedImage(state, 'gpu-cosplay:1.2.0', ours)).toThrow(expect.objectContaining({code: 'IMAGE_NOT_PINNED'}))
  })
})
