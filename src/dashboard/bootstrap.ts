import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { accounts, businesses, members, memberSignInLinks } from '../../db/schema/index.ts'
import { signInLinkUrl, SIGN_IN_LINK_TTL_MS } from '../members/service.ts'
import { hashToken, randomToken } from '../access/secrets.ts'
import { createLogger, lineLogger } from '../observability/log.ts'

export interface BootstrapOptions {
  /** Where this service is reached, e.g. `http://localhost:3000`; the link points there. */
  baseUrl: string
  log?: (line: string) => void
  businessName?: string
  ownerEmail?: string
  now?: Date
}

export const BOOTSTRAP_LINE_PREFIX = 'keygate first start:'

/** What the first start created, for the process to show (src/process/first-start.ts). */
export interface FirstOwner {
  url: string
  email: string
  businessName: string
  expiresAt: Date
}

/**
 * On a database without any business, creates a first business and its owner and prints
 * a one-time sign-in link on which the owner chooses a password: a newcomer can sign in
 * at once, and no password ever lands in a log. Runs under a transaction-scoped advisory
 * lock so that several instances starting together create one business, not several.
 * Returns the link and whom it signs in (null when the database already had a business).
 */
export async function bootstrapFirstOwner(db: Db, options: BootstrapOptions): Promise<FirstOwner | null> {
  const now = options.now ?? new Date()
  const expiresAt = new Date(now.getTime() + SIGN_IN_LINK_TTL_MS)
  const email = options.ownerEmail ?? 'owner@example.com'
  const token = randomToken()
  const created = await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('keygate:bootstrap-first-owner'))`)
    const [any] = await tx.select({ id: businesses.id }).from(businesses).limit(1)
    if (any) return null
    const [business] = await tx
      .insert(businesses)
      .values({ name: options.businessName ?? 'My business' })
      .returning()
    // No business means no membership, and an account lives only as long as one (src/members).
    const [account] = await tx
      .insert(accounts)
      .values({ email, passwordHash: null })
      .onConflictDoUpdate({ target: accounts.email, set: { email: sql`excluded.email` } })
      .returning()
    const [owner] = await tx.insert(members).values({ businessId: business!.id, accountId: account!.id, role: 'owner' }).returning()
    await tx.insert(memberSignInLinks).values({
      memberId: owner!.id,
      tokenHash: hashToken(token),
      createdAt: now,
      expiresAt,
      // Whoever starts the service is its operator; the membership is pending until the link is used.
      issuedBy: 'operator',
    })
    return { business: business! }
  })
  if (!created) return null
  const url = signInLinkUrl(options.baseUrl, token)
  const hours = Math.round(SIGN_IN_LINK_TTL_MS / 3600_000)
  ;(options.log ?? lineLogger(createLogger(), 'info'))(
    `${BOOTSTRAP_LINE_PREFIX} created business "${created.business.name}" and its owner ${email}. ` +
      `Open this one-time link within ${hours} h to choose a password and sign in: ${url}`,
  )
  return { url, email, businessName: created.business.name, expiresAt }
}
