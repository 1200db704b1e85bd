import { describe, expect, test } from 'bun:test'
import { argon2idPasswords } from '../../src/members/passwords.ts'

describe("members' passwords", () => {
  test("are argon2id at Bun's defaults (64 MiB, 2 passes) unless a cost is given", async () => {
    const passwords = argon2idPasswords()
    const hash = await passwords.hash('correct horse battery staple')
    expect(hash).toStartWith('$argon2id$v=19$m=65536,t=2,')
    expect(await passwords.verify('correct horse battery staple', hash)).toBe(true)
    expect(await passwords.verify('correct horse battery stapler', hash)).toBe(false)
  })

  test('a given cost is the one in the hash, and a hash of any cost still checks', async () => {
    const cheap = argon2idPasswords({ memoryCost: 1024, timeCost: 1 })
    const hash = await cheap.hash('correct horse battery staple')
    expect(hash).toStartWith('$argon2id$v=19$m=1024,t=1,')
    expect(await argon2idPasswords().verify('correct horse battery staple', hash)).toBe(true)
  })

  test('a stored hash that cannot be read is a wrong password, not an error', async () => {
    expect(await argon2idPasswords().verify('anything', 'not a hash')).toBe(false)
    expect(await argon2idPasswords().verify('anything', '')).toBe(false)
  })
})
