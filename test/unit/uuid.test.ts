import { describe, expect, test } from 'bun:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import '../../src/app.ts'
import { isUuid, Uuid } from '../../src/shared/uuid.ts'

// src/app.ts is imported so that the format registry is the one the service runs with.
const uuidSchema = TypeCompiler.Compile(Uuid)
const ID = '8ac51af5-3cd0-4fd0-816e-78e9738506d4'

const CASES: [string, string, boolean][] = [
  ['lower case', ID, true],
  ['upper case', ID.toUpperCase(), true],
  ['mixed case', '8AC51af5-3cd0-4FD0-816e-78e9738506d4', true],
  ['version 0 (PostgreSQL reads any version)', '8ac51af5-3cd0-0fd0-c16e-78e9738506d4', true],
  ['the nil UUID', '00000000-0000-0000-0000-000000000000', true],
  ['urn:uuid: form', `urn:uuid:${ID}`, false],
  ['URN:UUID: form', `URN:UUID:${ID}`, false],
  ['braces', `{${ID}}`, false],
  ['no hyphens', ID.replaceAll('-', ''), false],
  ['35 characters', ID.slice(0, 35), false],
  ['37 characters', `${ID}0`, false],
  ['a non-hex digit', ID.replace('8', 'g'), false],
  ['surrounding spaces', ` ${ID} `, false],
  ['a trailing newline', `${ID}\n`, false],
  ['empty', '', false],
]

describe('the uuid rule', () => {
  test.each(CASES)('%s: the schema and isUuid agree', (_, value, valid) => {
    expect(isUuid(value)).toBe(valid)
    expect(uuidSchema.Check(value)).toBe(valid)
  })
})
