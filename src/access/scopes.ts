import { t } from 'elysia'

/** The 13 scopes of the seed. There is no `ALL`: keys list their scopes explicitly. */
export const SCOPES = [
  'ANALYTICS_READ',
  'ANALYTICS_WRITE',
  'AUDIENCE_PERSON_READ',
  'AUDIENCE_PERSON_WRITE',
  'AUDIENCE_COMPANY_READ',
  'AUDIENCE_COMPANY_WRITE',
  'AUDIENCE_LIST_READ',
  'AUDIENCE_LIST_WRITE',
  'BLOG_READ',
  'BLOG_WRITE',
  'FLOW_TRIGGER',
  'MEMORY_READ',
  'MEMORY_WRITE',
] as const

export type Scope = (typeof SCOPES)[number]

/**
 * A scope on the wire. The `enum` is for the API reference and generated clients: TypeBox's
 * string check does not read it, so an unknown scope still reaches src/keys/rules.ts,
 * whose 400 names the scope and lists the valid ones.
 */
export const ScopeName = t.String({ maxLength: 64, enum: [...SCOPES] })

/**
 * Scopes that some public endpoint uses. A public key may hold only
 * these: any other scope would grant nothing to a key that can reach public endpoints only.
 */
export const PUBLIC_KEY_SCOPES: readonly Scope[] = [
  'ANALYTICS_WRITE',
  'AUDIENCE_PERSON_WRITE',
  'AUDIENCE_COMPANY_WRITE',
  'AUDIENCE_LIST_WRITE',
  'BLOG_READ',
  'FLOW_TRIGGER',
]

const scopeSet: ReadonlySet<string> = new Set(SCOPES)

export function isScope(value: string): value is Scope {
  return scopeSet.has(value)
}

/**
 * What a route requires, declared once on the route (`{ access: { scope, public } }`).
 * `scope: null` means any valid key; `public: true` puts the route in the public-key set.
 */
export interface RouteAccess {
  readonly scope: Scope | null
  readonly public: boolean
  /**
   * Throws when the route has no room for this business's request now (a full write
   * queue answers 503): asked once the key is known, before the body is read.
   */
  readonly checkRoom?: (businessId: string) => void
}
