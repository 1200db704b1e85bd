import { describe, expect, test } from 'bun:test'
import { admin, call, errorOf, seedBusiness, seedKey, testService } from '../support/service.ts'

// Allowed origins through HTTP (docs/api.md, "Allowed origins"): each row of the table as a whoami call, each invalid
// entry as a refused key creation. test/unit/origin.test.ts has the exhaustive table.

const rows: [entry: string, matches: (string | null)[], refuses: (string | null)[]][] = [
  ['*', ['https://anything.io', 'http://localhost:1234', null, 'null'], []],
  [
    'example.com',
    ['https://example.com', 'https://www.example.com', 'https://a.b.example.com'],
    ['http://example.com', 'https://example.com:8443', 'https://evilexample.com', 'https://example.com.evil.io', null, 'null'],
  ],
  [
    'app.example.com',
    ['https://app.example.com', 'http://app.example.com'],
    ['https://x.app.example.com', 'https://example.com', 'https://app.example.com:8443'],
  ],
  ['https://app.example.com', ['https://app.example.com'], ['http://app.example.com', 'https://app.example.com:8443']],
  ['https://app.example.com:8443', ['https://app.example.com:8443'], ['https://app.example.com', 'http://app.example.com:8443']],
  ['localhost:3000', ['http://localhost:3000', 'https://localhost:3000'], ['http://localhost:3001', 'http://127.0.0.1:3000']],
]

describe.each(rows)('allowed origin %s', (entry, matches, refuses) => {
  test.each(matches)('accepts Origin %s', async (origin) => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { allowedOrigins: [entry] })
    const response = await call(service, '/api/v0/whoami', { key, headers: origin === null ? {} : { origin } })
    expect(response.status).toBe(200)
    expect((await response.json()).origin).toBe(origin)
  })

  if (refuses.length) {
    test.each(refuses)('refuses Origin %s with 403 origin_not_allowed', async (origin) => {
      const service = await testService()
      const businessId = await seedBusiness(service)
      const { key } = await seedKey(service, businessId, { allowedOrigins: [entry] })
      const response = await call(service, '/api/v0/whoami', { key, headers: origin === null ? {} : { origin } })
      expect(response.status).toBe(403)
      const error = await errorOf(response)
      expect(error.code).toBe('origin_not_allowed')
      expect(error.message).toContain(entry)
    })
  }
})

describe('the Origin side is never repaired', () => {
  const unrepaired = [
    'https://example.com.',
    'https://bücher.de',
    'https://example.com/path',
    'https://user@example.com',
    'HTTPS://EXAMPLE.COM',
    'ftp://example.com',
  ]
  test.each(unrepaired)('%s matches nothing but *', async (origin) => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { allowedOrigins: ['example.com', 'bücher.de'] })
    expect((await call(service, '/api/v0/whoami', { key, origin })).status).toBe(403)
    const star = await seedKey(service, businessId, { allowedOrigins: ['*'] })
    expect((await call(service, '/api/v0/whoami', { key: star.key, origin })).status).toBe(200)
  })
})

describe('invalid entries are refused at creation with the reason', () => {
  const invalid = [
    'https://',
    ':8080',
    '8080',
    'com',
    'co.uk',
    'github.io',
    'vercel.app',
    'example.unknowntld',
    '*.example.com',
    'example.com/path',
    'example.com?q=1',
    'example.com#top',
    'user@example.com',
    'null',
    'localhost',
    'http://localhost',
    'https://localhost',
    'localhost:0',
    'localhost:65536',
    'example.com:8080',
    '127.0.0.1',
    '192.168.0.1:80',
    `${'a'.repeat(64)}.com`,
    `${'a.'.repeat(127)}com`,
    'a..example.com',
    '.example.com',
    'example.com.',
    '-a.example.com',
    'a-.example.com',
    'exa\tmple.com',
    'exa mple.com',
    '',
    '   ',
    'ftp://example.com',
    'ws://example.com',
  ]
  test.each(invalid)('%p', async (entry) => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, {
      body: { type: 'public', name: 'w', allowedOrigins: [entry], scopes: ['ANALYTICS_WRITE'], createdBy: 'ops' },
    })
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe('invalid_request')
    expect(error.message).toContain('allowedOrigins[0]')
    expect(error.message.length).toBeGreaterThan(40)
  })

  test('PATCH refuses localhost without a port in every form, like creation, and keeps the list', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { record } = await seedKey(service, businessId, { allowedOrigins: ['localhost:3000'] })
    for (const entry of ['localhost', 'http://localhost', 'https://localhost']) {
      const response = await admin(service, `/keys/${record.id}`, { method: 'PATCH', body: { allowedOrigins: ['example.com', entry] } })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('invalid_request')
      expect(error.message).toContain('allowedOrigins[1]')
      expect(error.message).toContain('needs a port')
    }
    const answer = await admin(service, `/keys/${record.id}`)
    expect(((await answer.json()) as { allowedOrigins: string[] }).allowedOrigins).toEqual(['localhost:3000'])
  })

  test('example.com:8080 is refused with the advice to write https://example.com:8080', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, {
      body: { type: 'public', name: 'w', allowedOrigins: ['example.com:8080'], scopes: ['ANALYTICS_WRITE'], createdBy: 'ops' },
    })
    expect((await errorOf(response)).message).toContain('https://example.com:8080')
  })

  test('IP addresses are accepted in the full http(s)://ip:port form', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { allowedOrigins: ['http://127.0.0.1:8080'] })
    expect((await call(service, '/api/v0/whoami', { key, origin: 'http://127.0.0.1:8080' })).status).toBe(200)
    expect((await call(service, '/api/v0/whoami', { key, origin: 'http://127.0.0.1:8081' })).status).toBe(403)
  })
})

/** How often `text` holds `entry` as a quoted string. */
const timesNamed = (text: string, entry: string) => text.split(JSON.stringify(entry)).length - 1

describe('origin messages name each entry once', () => {
  test('a refused Origin: the entry that nearly matched in its hint, the others in the list, each once', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { allowedOrigins: ['example.com', 'localhost:3000'] })
    const response = await call(service, '/api/v0/whoami', { key, origin: 'http://example.com' })
    expect(response.status).toBe(403)
    const { code, message } = await errorOf(response)
    expect(code).toBe('origin_not_allowed')
    expect(message).toBe(
      'Origin "http://example.com" is not allowed: entry "example.com" requires https (the origin uses http); ' +
        'the key\'s other entries: "localhost:3000". To allow it, add "http://example.com"',
    )
    expect(timesNamed(message, 'example.com')).toBe(1)
    expect(timesNamed(message, 'localhost:3000')).toBe(1)
  })

  test('an Origin no entry comes near lists the allowed entries once', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await seedKey(service, businessId, { allowedOrigins: ['example.com', 'localhost:3000'] })
    const { message } = await errorOf(await call(service, '/api/v0/whoami', { key, origin: 'https://evil.io' }))
    expect(message).toBe(
      'Origin "https://evil.io" is not allowed: this key allows "example.com", "localhost:3000". To allow it, add "https://evil.io"',
    )
  })

  test.each([
    ['localhost', 'needs a port'],
    ['com', 'is a public suffix'],
    ['*.example.com', 'is a wildcard'],
    ['example.com:8080', 'has a port but no scheme'],
    ['ftp://example.com', 'uses the scheme "ftp:"'],
    ['127.0.0.1', 'is an IP address'],
  ])('an invalid entry %p is named once when the key is refused', async (entry, says) => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const response = await admin(service, `/businesses/${businessId}/keys`, {
      body: { type: 'public', name: 'w', allowedOrigins: ['example.com', entry], scopes: ['ANALYTICS_WRITE'], createdBy: 'ops' },
    })
    expect(response.status).toBe(400)
    const { message } = await errorOf(response)
    expect(message).toStartWith(`allowedOrigins[1]: ${JSON.stringify(entry)} ${says}`)
    expect(timesNamed(message, entry)).toBe(1)
  })
})
