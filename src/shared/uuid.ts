import { t } from 'elysia'

/**
 * The one rule for a UUID on the wire: 8-4-4-4-12 hex digits, either case, any version.
 * PostgreSQL would also read braces, `urn:uuid:` and hyphen-less forms; all are refused
 * here, so every route that takes an id answers a malformed one alike (400 on the APIs,
 * 404 in the dashboard) before the database.
 *
 * No `format: 'uuid'`: what that format means depends on who registered it last (Elysia's
 * own takes `urn:uuid:`; @elysiajs/openapi replaces it on import with one that refuses
 * version-0 ids), so the pattern alone is the rule.
 */
const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID_SHAPE = new RegExp(UUID_PATTERN)

/** Tells an id from a slug, a cursor's id from a forged one, a dashboard path's id from junk. */
export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value)
}

export const Uuid = t.String({ pattern: UUID_PATTERN, error: 'must be a UUID' })

/** `/…/:id` on every route whose id is a UUID. */
export const IdParams = t.Object({ id: Uuid })
