import { expect, test } from 'bun:test'
import { queryRows, sql } from '../../db/client.ts'
import { applyMigrations } from '../../db/migrate.ts'
import { migrateBefore, scratchDatabase } from '../support/scratch-database.ts'
import { hashToken } from '../../src/access/secrets.ts'
import { createSessionStore } from '../../src/dashboard/sessions.ts'
import { createMemberService } from '../../src/members/service.ts'

// The migration to pending memberships (docs/dashboard.md, "Members and sign-in links"): of
// the memberships written before it, only the first of an account with a password is known
// to be its person's and stays joined; the others wait for a link and the password; links
// written before it are a member's, which cannot replace a password. A database of its own,
// migrated in two steps around the change; a second embedded database takes long to start.
const TAG = '0011_accounts_are_their_persons'
const PASSWORD = 'correct horse battery staple'

test('memberships and links written before pending memberships: the first of a person stays, the others wait', async () => {
  const { database, dispose } = await scratchDatabase('pending')
  try {
    const { db } = database
    await migrateBefore(database, TAG)
    const passwordHash = await Bun.password.hash(PASSWORD)
    const [acme, rival] = await queryRows<{ id: string }>(db, sql`insert into businesses (name) values ('Acme'), ('Rival') returning id`)
    const [ada] = await queryRows<{ id: string }>(
      db,
      sql`insert into accounts (email, password_hash) values ('ada@example.com', ${passwordHash}) returning id`,
    )
    const [bo] = await queryRows<{ id: string }>(db, sql`insert into accounts (email) values ('bo@example.com') returning id`)
    const [adaAcme] = await queryRows<{ id: string }>(
      db,
      sql`insert into members (business_id, account_id, role, created_at) values (${acme!.id}, ${ada!.id}, 'owner', now() - interval '2 days') returning id`,
    )
    const [adaRival] = await queryRows<{ id: string }>(
      db,
      sql`insert into members (business_id, account_id, role, created_at) values (${rival!.id}, ${ada!.id}, 'owner', now() - interval '1 day') returning id`,
    )
    const [boAcme] = await queryRows<{ id: string }>(
      db,
      sql`insert into members (business_id, account_id, role) values (${acme!.id}, ${bo!.id}, 'member') returning id`,
    )
    for (const [memberId, token] of [
      [adaAcme!.id, 'ada-session'],
      [adaRival!.id, 'ada-rival-session'],
    ] as const) {
      await db.execute(
        sql`insert into member_sessions (member_id, token_hash, csrf_token, expires_at) values (${memberId}, ${hashToken(token)}, 'csrf', now() + interval '1 hour')`,
      )
    }
    for (const [memberId, token] of [
      [boAcme!.id, 'bo-link'],
      [adaRival!.id, 'ada-link'],
    ] as const) {
      await db.execute(
        sql`insert into member_sign_in_links (member_id, token_hash, expires_at) values (${memberId}, ${hashToken(token)}, now() + interval '1 hour')`,
      )
    }

    await applyMigrations(db)

    const rows = await queryRows<{ id: string; joined: boolean }>(db, sql`select id, accepted_at is not null as joined from members`)
    expect(new Map(rows.map((r) => [r.id, r.joined]))).toEqual(
      new Map([
        [adaAcme!.id, true],
        [adaRival!.id, false],
        [boAcme!.id, false],
      ]),
    )
    // Ada's session on Acme goes on, without Rival; the one showing Rival is over.
    const sessions = createSessionStore(db)
    expect((await sessions.authenticate('ada-session'))?.memberships.map((m) => m.businessName)).toEqual(['Acme'])
    expect(await sessions.authenticate('ada-rival-session')).toBeNull()
    // Old links are a member's: Bo's sets his first password; Ada's asks for hers, and joins Rival with it.
    const members = createMemberService(db)
    expect(await members.findByLink('bo-link')).toMatchObject({ id: boAcme!.id, issuedBy: 'member', asks: 'choose' })
    expect(await members.findByLink('ada-link')).toMatchObject({ id: adaRival!.id, issuedBy: 'member', asks: 'confirm' })
    expect(await members.redeemLink('ada-link', 'a password of whoever held the link')).toBe('asks password')
    expect(await members.acceptLink('ada-link', PASSWORD)).toMatchObject({ id: adaRival!.id })
    // Signing in opens the membership she joined first, not the pending one she just accepted.
    const credentials = await members.credentialsOf('ada@example.com')
    expect(credentials && (await members.checkPassword(credentials, PASSWORD))).toEqual({ accountId: ada!.id, memberId: adaAcme!.id })
    // A link's issuer is one of two.
    const odd = Promise.resolve(
      db.execute(
        sql`insert into member_sign_in_links (member_id, token_hash, expires_at, issued_by) values (${boAcme!.id}, 'x', now(), 'someone')`,
      ),
    )
    expect(
      await odd.then(
        () => 'stored',
        () => 'refused',
      ),
    ).toBe('refused')
  } finally {
    await dispose()
  }
}, 180_000)
