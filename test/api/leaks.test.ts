import { afterAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { auditEntries, apiKeys, webhookEvents } from '../../db/schema/index.ts'
import { hashKey } from '../../src/access/key-format.ts'
import { testDatabase } from '../support/database.ts'
import { deepJson, hostileString, hostileValue, mutatedBody, RUNS } from '../support/hostile.ts'
import { admin, behindTrustedProxy, call, errorOf, seedBusiness, seedKey, TEST_AUTHOR, testService } from '../support/service.ts'

// docs/api.md, "When a key leaks": GitHub's signed reports, the public report route, and
// what the service does to a reported key. GitHub's keys come from a file here
// (SECRET_SCANNING_PUBLIC_KEYS); the fetched copy is tested in test/unit/github-keys.test.ts.

const ORIGIN = 'https://www.example.com'
const directory = mkdtempSync(join(tmpdir(), 'keygate-leaks-'))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

function signingKey(): { privateKey: KeyObject; pem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  return { privateKey, pem: publicKey.export({ type: 'spki', format: 'pem' }).toString() }
}

const github = signingKey()
const retired = signingKey()
const stranger = signingKey()
const GITHUB_ID = 'bcb53661c06b4728e59d897fb6165d5c9cda0fd9cdf9d09ead458168deb7518c'
const RETIRED_ID = '90a421169f0a406205f1563a953312f0be898d3c7b6c06b681aa86a874555f4a'
const keysFile = join(directory, 'secret-scanning-keys.json')
writeFileSync(
  keysFile,
  JSON.stringify({
    public_keys: [
      { key_identifier: GITHUB_ID, key: github.pem, is_current: true },
      { key_identifier: RETIRED_ID, key: retired.pem, is_current: false },
      { key_identifier: 'not-a-key', key: 'garbage', is_current: false },
    ],
  }),
)

async function setup(policy: 'revoke' | 'notify' = 'revoke') {
  const service = await testService({ leaks: { policy, publicKeysFile: keysFile }, clientAddress: behindTrustedProxy })
  const businessId = await seedBusiness(service)
  const { db } = await testDatabase()
  return { service, businessId, db }
}

interface Signed {
  body: string
  identifier?: string | null
  signature?: string | null
}

function signed(report: unknown, by = github.privateKey, identifier = GITHUB_ID): Signed {
  const body = typeof report === 'string' ? report : JSON.stringify(report)
  return { body, identifier, signature: sign('sha256', Buffer.from(body), { key: by, dsaEncoding: 'der' }).toString('base64') }
}

function report(service: Awaited<ReturnType<typeof setup>>['service'], sent: Signed) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (sent.identifier) headers['github-public-key-identifier'] = sent.identifier
  if (sent.signature) headers['github-public-key-signature'] = sent.signature
  return call(service, '/security/secret-scanning/github', { method: 'POST', body: sent.body, headers })
}

const found = (token: string, url = 'https://github.com/acme/site/blob/abc123/.env') => ({
  token,
  type: 'keygate_private_key',
  url,
  source: 'content',
})

async function leakedEntries(db: Awaited<ReturnType<typeof setup>>['db'], keyId: string) {
  return db
    .select()
    .from(auditEntries)
    .where(and(eq(auditEntries.keyId, keyId), eq(auditEntries.action, 'key.leaked')))
}

async function leakEvents(db: Awaited<ReturnType<typeof setup>>['db'], businessId: string) {
  return db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.businessId, businessId), eq(webhookEvents.type, 'key.leaked')))
}

describe('POST /security/secret-scanning/github', () => {
  test('labels each token; a live private key is revoked, flagged, audited and evented, never holding the key', async () => {
    const { service, businessId, db } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const publicKey = await seedKey(service, businessId, { type: 'public' })
    const revoked = await seedKey(service, businessId, { type: 'private' })
    await service.services.keys.revoke(businessId, revoked.record.id, TEST_AUTHOR)
    expect((await call(service, '/api/v0/whoami', { key: live.key })).status).toBe(200)
    const unknown = `sk_${'Zz9'.repeat(12)}`

    const response = await report(
      service,
      signed([found(live.key), found(publicKey.key), found(revoked.key), found(unknown), found('not a key at all')]),
    )
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual([
      { token_hash: hashKey(live.key), token_type: 'keygate_private_key', label: 'true_positive' },
      { token_hash: hashKey(publicKey.key), token_type: 'keygate_private_key', label: 'false_positive' },
      { token_hash: hashKey(revoked.key), token_type: 'keygate_private_key', label: 'true_positive' },
      { token_hash: hashKey(unknown), token_type: 'keygate_private_key', label: 'false_positive' },
      { token_hash: hashKey('not a key at all'), token_type: 'keygate_private_key', label: 'false_positive' },
    ])

    // Refused at once on this instance.
    expect((await errorOf(await call(service, '/api/v0/whoami', { key: live.key }))).code).toBe('invalid_api_key')
    const record = (await (await admin(service, `/keys/${live.record.id}`)).json()) as Record<string, unknown>
    expect(record.revokedAt).not.toBeNull()
    expect(record.leak).toEqual({
      reportedAt: record.revokedAt,
      url: 'https://github.com/acme/site/blob/abc123/.env',
      source: 'content',
      action: 'revoked',
    })
    // The public key is left alone: public by design.
    expect((await call(service, '/api/v0/whoami', { key: publicKey.key, origin: ORIGIN })).status).toBe(200)
    const publicRecord = (await (await admin(service, `/keys/${publicKey.record.id}`)).json()) as Record<string, unknown>
    expect(publicRecord.leak).toBeNull()
    // The revoked key gets no leak: nothing was done to it.
    const [revokedRow] = await db.select().from(apiKeys).where(eq(apiKeys.id, revoked.record.id))
    expect(revokedRow!.leak).toBeNull()

    const entries = await leakedEntries(db, live.record.id)
    expect(entries).toHaveLength(1)
    expect(entries[0]!.actor).toBe('service')
    expect(entries[0]!.changes).toEqual({
      foundAt: { from: null, to: 'https://github.com/acme/site/blob/abc123/.env' },
      source: { from: null, to: 'content' },
      action: { from: null, to: 'revoked' },
      revokedAt: { from: null, to: record.revokedAt },
    })
    const events = await leakEvents(db, businessId)
    expect(events).toHaveLength(1)
    expect(events[0]!.payload).toMatchObject({ keyId: live.record.id, source: 'content', action: 'revoked' })
    for (const written of [JSON.stringify(entries), JSON.stringify(events)]) {
      expect(written).not.toContain(live.key)
      expect(written).not.toContain(hashKey(live.key))
    }
  })

  test('the same report sent again answers the same and changes nothing more', async () => {
    const { service, businessId, db } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const sent = signed([found(live.key), found(live.key, 'https://gist.github.com/someone/1')])
    const first = await report(service, sent)
    const [before] = await db.select().from(apiKeys).where(eq(apiKeys.id, live.record.id))
    const again = await report(service, sent)
    expect(again.status).toBe(200)
    expect(await again.json()).toEqual(await first.json())
    const [after] = await db.select().from(apiKeys).where(eq(apiKeys.id, live.record.id))
    expect(after).toEqual(before!)
    // One key twice in one report: the first place it was found is kept, acted on once.
    expect(after!.leak!.url).toBe('https://github.com/acme/site/blob/abc123/.env')
    expect(await leakedEntries(db, live.record.id)).toHaveLength(1)
    expect(await leakEvents(db, businessId)).toHaveLength(1)
  })

  test('LEAKED_KEY_POLICY=notify: the key keeps working, flagged "notified"', async () => {
    const { service, businessId, db } = await setup('notify')
    const live = await seedKey(service, businessId, { type: 'private' })
    expect((await report(service, signed([found(live.key)]))).status).toBe(200)
    expect((await call(service, '/api/v0/whoami', { key: live.key })).status).toBe(200)
    const record = (await (await admin(service, `/keys/${live.record.id}`)).json()) as Record<string, unknown>
    expect(record.revokedAt).toBeNull()
    expect(record.leak).toMatchObject({ action: 'notified', source: 'content' })
    const [entry] = await leakedEntries(db, live.record.id)
    expect(entry!.changes).toEqual({
      foundAt: { from: null, to: 'https://github.com/acme/site/blob/abc123/.env' },
      source: { from: null, to: 'content' },
      action: { from: null, to: 'notified' },
    })
  })

  test('a report signed with a retired key GitHub still publishes is accepted', async () => {
    const { service, businessId } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const response = await report(service, signed([found(live.key)], retired.privateKey, RETIRED_ID))
    expect(response.status).toBe(200)
    expect((await errorOf(await call(service, '/api/v0/whoami', { key: live.key }))).code).toBe('invalid_api_key')
  })

  const forged: [string, (report: unknown) => Signed][] = [
    ['no signature headers', (r) => ({ body: JSON.stringify(r), identifier: null, signature: null })],
    ['no identifier', (r) => ({ ...signed(r), identifier: null })],
    ['no signature', (r) => ({ ...signed(r), signature: null })],
    ['an unknown key identifier', (r) => signed(r, github.privateKey, 'f'.repeat(64))],
    ['the identifier of an entry that is not a key', (r) => signed(r, github.privateKey, 'not-a-key')],
    ['a key GitHub does not publish', (r) => signed(r, stranger.privateKey)],
    ['a signature of another body', (r) => ({ ...signed(r), signature: signed([...(r as unknown[]), found('x')]).signature })],
    ['a body changed after signing', (r) => ({ ...signed(r), body: `${JSON.stringify(r)} ` })],
    ['a signature that is not base64', (r) => ({ ...signed(r), signature: '!!!not base64!!!' })],
    ['a signature that is base64 of garbage', (r) => ({ ...signed(r), signature: Buffer.from('garbage').toString('base64') })],
    ['an empty signature header', (r) => ({ ...signed(r), signature: '' })],
  ]
  test.each(forged)('%s: 401 invalid_signature, and nothing changes', async (_, forge) => {
    const { service, businessId, db } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const response = await report(service, forge([found(live.key)]))
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe('invalid_signature')
    expect((await call(service, '/api/v0/whoami', { key: live.key })).status).toBe(200)
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, live.record.id))
    expect(row!.leak).toBeNull()
    expect(await leakedEntries(db, live.record.id)).toHaveLength(0)
    expect(await leakEvents(db, businessId)).toHaveLength(0)
  })

  test("bodies: over 1 MiB 413 unread; more than 1,000 tokens, not JSON, or not GitHub's shape 400 naming the field", async () => {
    const { service } = await setup()
    const big = await report(service, signed('x'.repeat(1024 * 1024 + 1)))
    expect(big.status).toBe(413)
    const many = await report(service, signed(Array.from({ length: 1001 }, (_, i) => found(`sk_${String(i).padStart(32, 'a')}`))))
    expect(many.status).toBe(400)
    expect((await errorOf(many)).code).toBe('invalid_request')
    const notJson = await report(service, signed('[{"token": '))
    expect(notJson.status).toBe(400)
    const wrongShape = await report(service, signed([{ token: 5, type: 'x', url: 'u', source: 's' }]))
    expect(wrongShape.status).toBe(400)
    expect((await errorOf(wrongShape)).field).toBe('[0].token')
    // 1,000 tokens is within the limit.
    const most = await report(service, signed(Array.from({ length: 1000 }, (_, i) => found(`sk_${String(i).padStart(32, 'a')}`))))
    expect(most.status).toBe(200)
    expect(((await most.json()) as unknown[]).length).toBe(1000)
  })
})

describe('POST /security/leaked-keys', () => {
  function reportKeys(service: Awaited<ReturnType<typeof setup>>['service'], body: unknown, from = '198.51.100.20') {
    return call(service, '/security/leaked-keys', { method: 'POST', body, headers: { 'x-forwarded-for': from } })
  }

  test('anyone may report keys without a key: 202 with the count, whatever the keys are; a private key is handled as a GitHub report', async () => {
    const { service, businessId, db } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const publicKey = await seedKey(service, businessId, { type: 'public' })
    const url = 'https://pastebin.example/raw/abc'
    const response = await reportKeys(service, { keys: [live.key, publicKey.key, 'nonsense', `sk_${'Q'.repeat(32)}`], url })
    expect(response.status).toBe(202)
    expect(await response.json()).toEqual({ received: 4 })
    expect((await errorOf(await call(service, '/api/v0/whoami', { key: live.key }))).code).toBe('invalid_api_key')
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, live.record.id))
    expect(row!.leak).toMatchObject({ url, source: 'report', action: 'revoked' })
    // Nothing in the answer tells unknown keys from real ones.
    const unknownOnly = await reportKeys(service, { keys: [`sk_${'W'.repeat(32)}`, 'x', 'y', 'z'], url })
    expect(unknownOnly.status).toBe(202)
    expect(await unknownOnly.json()).toEqual({ received: 4 })
  })

  test('bad bodies are 400 naming the field and change nothing', async () => {
    const { service, businessId, db } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const cases: [unknown, string][] = [
      [{ keys: Array.from({ length: 101 }, () => live.key), url: 'https://x.example' }, 'keys'],
      [{ keys: [], url: 'https://x.example' }, 'keys'],
      [{ keys: [live.key] }, 'url'],
      [{ keys: [live.key], url: 'https://x.example', extra: 1 }, 'extra'],
      [{ keys: [live.key, 5], url: 'https://x.example' }, 'keys[1]'],
    ]
    for (const [body, field] of cases) {
      const response = await reportKeys(service, body)
      expect(response.status).toBe(400)
      expect((await errorOf(response)).field).toBe(field)
    }
    expect((await reportKeys(service, '{"keys": [')).status).toBe(400)
    expect((await call(service, '/api/v0/whoami', { key: live.key })).status).toBe(200)
    expect(await leakedEntries(db, live.record.id)).toHaveLength(0)
  })

  test('60 reports an hour from one address; the 61st is 429 with Retry-After, another address is still heard', async () => {
    const { service } = await setup()
    const body = { keys: ['x'], url: 'https://x.example' }
    for (let i = 0; i < 60; i++) expect((await reportKeys(service, body, '198.51.100.30')).status).toBe(202)
    const refused = await reportKeys(service, body, '198.51.100.30')
    expect(refused.status).toBe(429)
    expect((await errorOf(refused)).code).toBe('rate_limited')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await reportKeys(service, body, '198.51.100.31')).status).toBe(202)
  })
})

describe('hostile reports', () => {
  test('signed GitHub reports of any shape: never a 5xx, and no key changes unless the report names it', async () => {
    const { service, businessId, db } = await setup()
    const live = await seedKey(service, businessId, { type: 'private' })
    const entry = fc.record({ token: hostileValue, type: hostileValue, url: hostileValue, source: hostileValue }, { requiredKeys: [] })
    const body = fc.oneof(
      fc.array(entry, { maxLength: 5 }).map((entries) => JSON.stringify(entries)),
      deepJson,
      hostileString,
      mutatedBody({ token: 'x', type: 'y', url: 'z', source: 'content' }).map((one) => `[${one}]`),
    )
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const response = await report(service, signed(text))
        expect(response.status).toBeLessThan(500)
      }),
      { numRuns: RUNS },
    )
    const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, live.record.id))
    expect(row!.leak).toBeNull()
    expect(row!.revokedAt).toBeNull()
  })

  test("anyone's reports of any shape: never a 5xx", async () => {
    const { service } = await setup()
    const body = fc.oneof(
      mutatedBody({ keys: ['sk_x'], url: 'https://x.example' }),
      deepJson,
      hostileString,
      fc.record({ keys: fc.array(hostileValue, { maxLength: 5 }), url: hostileValue }).map((value) => JSON.stringify(value)),
    )
    let i = 0
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        // A fresh address each time: the hour's budget of one address is not what is tested here.
        const from = `198.51.${100 + (Math.floor(i / 250) % 100)}.${i++ % 250}`
        const response = await call(service, '/security/leaked-keys', {
          method: 'POST',
          body: text,
          headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
        })
        expect(response.status).toBeLessThan(500)
      }),
      { numRuns: RUNS },
    )
  })
})
