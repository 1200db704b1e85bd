import { describe, test } from 'bun:test'
import fc from 'fast-check'
import { codePointLength, cutToCharacters, hasCodePointsWithin } from '../../src/shared/characters.ts'

// Any UTF-16 text, lone surrogates included (JSON lets a client send them): the counts must
// agree with the engine's own code-point iteration, which takes a lone surrogate as one.
const oneUnit = (unit: 'binary' | 'grapheme') => fc.string({ unit, minLength: 1, maxLength: 1 })
const anyText = fc.string({
  unit: fc.oneof(fc.constantFrom('\ud83d', '\ude00', '\ud800', '\udfff'), oneUnit('binary'), oneUnit('grapheme')),
  maxLength: 60,
})

describe('code points', () => {
  test('codePointLength counts as the string iterator does, whatever the text', () => {
    fc.assert(
      fc.property(anyText, (text) => codePointLength(text) === [...text].length),
      { numRuns: 2_000 },
    )
  })

  test('hasCodePointsWithin agrees with the count, for any bounds', () => {
    fc.assert(
      fc.property(anyText, fc.nat(40), fc.nat(40), (text, a, b) => {
        const [min, max] = a <= b ? [a, b] : [b, a]
        const count = [...text].length
        return hasCodePointsWithin(text, min, max) === (count >= min && count <= max)
      }),
      { numRuns: 2_000 },
    )
  })

  test('cutToCharacters keeps the first max code points, never half a pair, and marks a cut', () => {
    fc.assert(
      fc.property(anyText, fc.integer({ min: 1, max: 30 }), (text, max) => {
        const cut = cutToCharacters(text, max)
        const points = [...text]
        if (points.length <= max) return cut === text
        return cut === `${points.slice(0, max).join('')}…`
      }),
      { numRuns: 2_000 },
    )
  })
})
