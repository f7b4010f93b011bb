/** Issue 27: an image reference is Docker's grammar or nothing, before it reaches the engine. */
import {describe, expect, it} from '@jest/globals'

import {assertImageRef, isImageRef} from '../../../src/core/image-ref.js'

const HEX64 = 'a'.repeat(32) + '0123456789abcdef0123456789abcdef'

describe('image references', () => {
  it.each([
    'ubuntu',
    'ubuntu:22.04',
    'pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime',
    'gpu-cosplay:0.1.0',
    'nvcr.io/nvidia/pytorch:24.05-py3',
    'localhost:5000/team/img:v1',
    'registry.example.com/a/b__c/d-e.f',
    'a---b',
    `img@sha256:${HEX64}`,
    `localhost:5000/img:tag@sha256:${HEX64}`,
    `sha256:${HEX64}`,
    HEX64,
    '0123456789ab',
  ])('%s is a reference', (ref) => {
    expect(isImageRef(ref)).toBe(true)
    expect(() => assertImageRef(ref)).not.toThrow()
  })

  it.each([
    ['a path up', '../containers/json'],
    ['a path up inside', 'a/../b'],
    ['a dot segment', 'a/./b'],
    ['a query', 'x?y'],
    ['a fragment', 'x#y'],
    ['a space', 'a b'],
    ['an escape', 'a%2fb'],
    ['a newline', 'a\nb'],
    ['upper case in the path', 'Ubuntu'],
    ['an empty name', ''],
    ['an empty segment', 'a//b'],
    ['a leading slash', '/a'],
    ['a trailing slash', 'a/'],
    ['a leading dash', '-a'],
    ['a tag alone', ':tag'],
    ['an empty tag', 'a:'],
    ['a tag too long', `a:${'t'.repeat(129)}`],
    ['a short digest', 'a@sha256:abc'],
    ['a name too long', 'a'.repeat(256)],
    ['a backslash', 'a\\b'],
    ['an IPv6 registry', '[::1]:5000/a'],
  ])('%s is refused: BAD_IMAGE, exit 2', (_label, ref) => {
    expect(isImageRef(ref)).toBe(false)
    expect(() => assertImageRef(ref)).toThrow(expect.objectContaining({code: 'BAD_IMAGE', exit: 2}))
  })
})
