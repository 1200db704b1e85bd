import { expect, test } from 'bun:test'
import { queryRows, sql } from '../../db/client.ts'
import { applyMigrations } from '../../db/migrate.ts'
import { migrateBefore, OWN_DATABASE_TEST_TIMEOUT, scratchDatabase } from '../support/scratch-database.ts'
import { hashToken } from '../../src/access/secrets.ts'
import { createSessionStore } from '../../src/dashboard/sessions.ts'
import { createMemberService } from '../../src/members/service.ts'

// Issue 33 item 1: the migration to accounts and memberships keeps every member, session
// and sign-in link of a database written before it. A database of its own (a fresh PGlite,
// or a scratch database on PostgreSQL), migrated in two steps around the change.
const TAG = '0006_accounts_and_memberships'

test(
  'members, sessions and sign-in links of a database written before accounts keep working after it',
  async () => {
    const { database, dispose } = await scratchDatabase('accounts')
    try {
      const { db } = database
      await migrateBefore(database, TAG)
      const passwordHash = await Bun.password.hash('correct horse battery staple')
      const [business] = await queryRows<{ id: string }>(db, sql`insert into businesses (name) values ('Acme') returning id`)
      const [ada] = await queryRows<{ id: string }>(
        db,
        sql`insert into members (business_id, email, password_hash, role) values (${business!.id}, 'ada@example.com', ${passwordHash}, 'owner') returning id`,
      )
      const [bo] = await queryRows<{ id: string }>(
        db,
        sql`insert into members (business_id, email, role) values (${business!.id}, 'bo@example.com', 'member') returning id`,
      )
      await db.execute(
        sql`insert into member_sessions (member_id, token_hash, csrf_token, expires_at) values (${ada!.id}, ${hashToken('ada-session')}, 'csrf', now() + interval '1 hour')`,
      )
      await db.execute(
        sql`insert into member_sign_in_links (member_id, token_hash, expires_at) values (${bo!.id}, ${hashToken('bo-link')}, now() + interval '1 hour')`,
      )

      await applyMigrations(db)

      // Each member is now an account of the same id and its membership.
      const rows = await queryRows<{ id: string; account_id: string; email: string; password_hash: string | null; role: string }>(
        db,
        sql`select m.id, m.account_id, a.email, a.password_hash, m.role from members m join accounts a on a.id = m.account_id order by a.email`,
      )
      expect(rows).toEqual([
        { id: ada!.id, account_id: ada!.id, email: 'ada@example.com', password_hash: passwordHash, role: 'owner' },
        { id: bo!.id, account_id: bo!.id, email: 'bo@example.com', password_hash: null, role: 'member' },
      ])
      // The session still signs Ada in, to Acme; her password still verifies; Bo's link still opens.
      const signedIn = await createSessionStore(db).authenticate('ada-session')
      expect(signedIn).toMatchObject({
        memberId: ada!.id,
        accountId: ada!.id,
        email: 'ada@example.com',
        businessName: 'Acme',
        role: 'owner',
      })
      const members = createMemberService(db)
      // The sign-in's two steps: the account and the membership it opens on, then the hash.
      const credentials = await members.credentialsOf('ada@example.com')
      expect(credentials && (await members.checkPassword(credentials, 'correct horse battery staple'))).toEqual({
        accountId: ada!.id,
        memberId: ada!.id,
      })
      expect(await members.findByLink('bo-link')).toMatchObject({ id: bo!.id, email: 'bo@example.com', businessName: 'Acme' })
      // One account per email still: a second one is refused by the database.
      const second = Promise.resolve(db.execute(sql`insert into accounts (email) values ('ada@example.com')`))
      expect(
        await second.then(
          () => 'stored',
          () => 'refused',
        ),
      ).toBe('refused')
    } finally {
      await dispose()
    }
  },
  OWN_DATABASE_TEST_TIMEOUT,
)
