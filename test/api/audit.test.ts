import { describe, expect, test } from 'bun:test'
import { auditEntries } from '../../db/schema/index.ts'
import { queryRows, sql } from '../../db/client.ts'
import type { Service } from '../../src/app.ts'
import { recordChange } from '../../src/audit/trail.ts'
import { testDatabase } from '../support/database.ts'
import { admin, errorOf, seedBusiness, testService } from '../support/service.ts'

// Every change to a key is recorded, in the change's transaction,
// immutably; the trail is read newest first in pages.

interface Entry {
  id: string
  at: string
  actor: string
  action: string
  keyId: string | null
  requestId: string | null
  changes: Record<string, { from: unknown; to: unknown }>
}

async function trail(service: Service, path: string): Promise<Entry[]> {
  const response = await admin(service, path)
  expect(response.status).toBe(200)
  return ((await response.json()) as { data: Entry[] }).data
}

async function createKey(service: Service, businessId: string) {
  const response = await admin(service, `/businesses/${businessId}/keys`, {
    body: { type: 'public', name: 'Website', allowedOrigins: ['example.com'], scopes: ['ANALYTICS_WRITE'], createdBy: 'ops' },
  })
  expect(response.status).toBe(201)
  return { response, key: (await response.json()) as { id: string; key: string } }
}

const storedEntries = async () => (await testDatabase()).db.select().from(auditEntries)

describe('the audit trail', () => {
  test('creation, a change, a revocation: one entry each, by the admin, with the request id, newest first', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { response: created, key } = await createKey(service, businessId)
    const patched = await admin(service, `/keys/${key.id}`, {
      method: 'PATCH',
      body: { name: 'Shop', scopes: ['ANALYTICS_WRITE'], allowedOrigins: ['example.com', 'shop.example.com'] },
    })
    expect(patched.status).toBe(200)
    const revoked = await admin(service, `/keys/${key.id}`, { method: 'DELETE' })
    expect(revoked.status).toBe(204)

    const entries = await trail(service, `/businesses/${businessId}/audit`)
    expect(entries.map((e) => e.action)).toEqual(['key.revoked', 'key.updated', 'key.created'])
    expect(entries.every((e) => e.actor === 'admin' && e.keyId === key.id)).toBe(true)
    expect(entries.map((e) => e.requestId)).toEqual([
      revoked.headers.get('x-request-id'),
      patched.headers.get('x-request-id'),
      created.headers.get('x-request-id'),
    ])
    const [revocation, update, creation] = entries
    // Only what changed, as from/to: the scopes were sent unchanged.
    expect(update!.changes).toEqual({
      name: { from: 'Website', to: 'Shop' },
      allowedOrigins: { from: ['example.com'], to: ['example.com', 'shop.example.com'] },
    })
    expect(Object.keys(revocation!.changes)).toEqual(['revokedAt'])
    expect(creation!.changes.name).toEqual({ from: null, to: 'Website' })
    // No entry holds the key or its digest.
    const stored = JSON.stringify(await storedEntries())
    expect(stored).not.toContain(key.key)
    expect(stored).not.toContain(new Bun.CryptoHasher('sha256').update(key.key).digest('hex'))
    // The key's own trail is the same three.
    expect((await trail(service, `/keys/${key.id}/audit`)).map((e) => e.id)).toEqual(entries.map((e) => e.id))
  })

  test('a failed change writes no entry; a change that changes nothing and a second revocation write none either', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await createKey(service, businessId)
    const count = async () => (await storedEntries()).length
    expect(await count()).toBe(1)
    const refused = await admin(service, `/keys/${key.id}`, { method: 'PATCH', body: { scopes: ['NOT_A_SCOPE'] } })
    expect(refused.status).toBe(400)
    const past = await admin(service, `/keys/${key.id}`, { method: 'PATCH', body: { expiresAt: '2001-01-01T00:00:00Z' } })
    expect(past.status).toBe(400)
    expect(await count()).toBe(1)
    expect((await admin(service, `/keys/${key.id}`, { method: 'PATCH', body: { name: 'Website' } })).status).toBe(200)
    expect(await count()).toBe(1)
    expect((await admin(service, `/keys/${key.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await admin(service, `/keys/${key.id}`, { method: 'DELETE' })).status).toBe(204)
    expect(await count()).toBe(2)
    const patchRevoked = await admin(service, `/keys/${key.id}`, { method: 'PATCH', body: { name: 'X' } })
    expect(patchRevoked.status).toBe(409)
    expect(await count()).toBe(2)
  })

  test('a roll records key.rolled on the old key and key.created (rolledFrom) on the new one', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await createKey(service, businessId)
    const rolled = (await (await admin(service, `/keys/${key.id}/roll`, { body: { graceSeconds: 0 } })).json()) as { id: string }
    const [created, roll] = await trail(service, `/businesses/${businessId}/audit?limit=2`)
    expect(roll!.action).toBe('key.rolled')
    expect(roll!.keyId).toBe(key.id)
    expect(roll!.changes.replacedBy).toEqual({ from: null, to: rolled.id })
    expect(Object.keys(roll!.changes).sort()).toEqual(['expiresAt', 'replacedBy'])
    expect(created!.action).toBe('key.created')
    expect(created!.keyId).toBe(rolled.id)
    expect(created!.changes.rolledFrom).toEqual({ from: null, to: key.id })
  })

  test('entries written within one millisecond are listed newest first in the order they were written', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const { key } = await createKey(service, businessId)
    const { db } = await testDatabase()
    // Fifty changes in one transaction: many share a millisecond, as a roll's two entries do.
    const names = Array.from({ length: 50 }, (_, i) => `name-${i}`)
    await db.transaction(async (tx) => {
      for (const name of names) {
        await recordChange(tx, {
          businessId,
          action: 'key.updated',
          by: { actor: 'admin' },
          keyId: key.id,
          changes: { name: { from: null, to: name } },
        })
      }
    })
    const listed = await trail(service, `/businesses/${businessId}/audit?limit=50`)
    expect(listed.map((entry) => entry.changes.name?.to)).toEqual(names.toReversed())
  })

  test('pages: limit and cursor walk the trail newest first without repeats; another business sees none of it', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const other = await seedBusiness(service, 'Other')
    const { key } = await createKey(service, businessId)
    for (let i = 0; i < 6; i++) {
      expect((await admin(service, `/keys/${key.id}`, { method: 'PATCH', body: { name: `Name ${i}` } })).status).toBe(200)
    }
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const response = await admin(service, `/businesses/${businessId}/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`)
      const page = (await response.json()) as { data: Entry[]; nextCursor: string | null }
      seen.push(...page.data.map((e) => e.id))
      cursor = page.nextCursor
    } while (cursor)
    const all = await trail(service, `/businesses/${businessId}/audit?limit=100`)
    expect(seen).toEqual(all.map((e) => e.id))
    expect(seen).toHaveLength(7)
    expect(all.map((e) => `${e.action} ${e.changes.name?.to}`)).toEqual([
      ...[5, 4, 3, 2, 1, 0].map((i) => `key.updated Name ${i}`),
      'key.created Website',
    ])
    expect(await trail(service, `/businesses/${other}/audit`)).toEqual([])
    const bad = await admin(service, `/businesses/${businessId}/audit?cursor=not-a-cursor`)
    expect(bad.status).toBe(400)
    expect((await errorOf(bad)).message).toContain('cursor')
  })

  test('the table refuses UPDATE and DELETE, whoever sends them', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    await createKey(service, businessId)
    const { db } = await testDatabase()
    const attempt = async (statement: ReturnType<typeof sql>) => {
      try {
        await db.execute(statement)
        return 'done'
      } catch (error) {
        return String((error as Error).cause ?? error)
      }
    }
    expect(await attempt(sql`update audit_entries set actor = 'someone else'`)).toContain('append-only')
    expect(await attempt(sql`delete from audit_entries`)).toContain('append-only')
    const rows = await queryRows<{ actor: string }>(db, sql`select actor from audit_entries`)
    expect(rows).toEqual([{ actor: 'admin' }])
  })

  test('no route changes or deletes an entry', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    await createKey(service, businessId)
    const [entry] = await trail(service, `/businesses/${businessId}/audit`)
    for (const method of ['PATCH', 'PUT', 'DELETE']) {
      const response = await admin(service, `/businesses/${businessId}/audit`, { method, body: method === 'DELETE' ? undefined : {} })
      expect(response.status).toBeGreaterThanOrEqual(400)
    }
    expect((await admin(service, `/audit/${entry!.id}`, { method: 'DELETE' })).status).toBe(404)
    expect(await trail(service, `/businesses/${businessId}/audit`)).toEqual([entry!])
  })
})

describe('the audit trail of members', () => {
  test('adding and removing a member through the admin API are recorded, the removal outliving the member', async () => {
    const service = await testService()
    const businessId = await seedBusiness(service)
    const added = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'Grace@Example.com', role: 'member' } })
    expect(added.status).toBe(201)
    const member = (await added.json()) as { id: string }
    const removed = await admin(service, `/members/${member.id}`, { method: 'DELETE' })
    expect(removed.status).toBe(204)
    const entries = await trail(service, `/businesses/${businessId}/audit`)
    expect(entries.map((e) => [e.action, e.actor, e.requestId])).toEqual([
      ['member.removed', 'admin', removed.headers.get('x-request-id')],
      ['member.created', 'admin', added.headers.get('x-request-id')],
    ])
    expect(entries[0]!.changes.email).toEqual({ from: 'grace@example.com', to: null })
    expect(entries[1]!.changes.role).toEqual({ from: null, to: 'member' })
    // A refused addition (the email is taken) records nothing.
    await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', role: 'member' } })
    const count = (await storedEntries()).length
    const again = await admin(service, `/businesses/${businessId}/members`, { body: { email: 'ada@example.com', role: 'owner' } })
    expect(again.status).toBe(409)
    expect((await storedEntries()).length).toBe(count)
  })
})
