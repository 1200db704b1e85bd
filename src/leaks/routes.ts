import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Elysia, t } from 'elysia'
import type { Budget } from '../config.ts'
import { ApiError } from '../errors.ts'
import { parseJsonBody } from '../http/json-body.ts'
import { readBodyBytes } from '../http/request-body.ts'
import { rateLimited } from '../access/rate-limit/answer.ts'
import type { RateLimiter } from '../access/rate-limit/limiter.ts'
import type { ClientAddressOf } from '../shared/client-address.ts'
import { strictBody } from '../shared/validation.ts'
import { validationProblem } from '../shared/validation-message.ts'
import type { SecretScanningKeys } from './github-keys.ts'
import type { LeakResponder } from './respond.ts'

/** The most tokens one GitHub report may hold. */
export const MAX_REPORTED_TOKENS = 1_000
/** The most keys one report to /security/leaked-keys may hold, and how often an address may send one. */
export const MAX_LEAKED_KEYS = 100
export const LEAK_REPORTS_PER_ADDRESS: Budget = { limit: 60, windowSeconds: 3_600 }

/** GitHub's report: fields beyond these may come, and are ignored. */
const GithubReport = t.Array(
  t.Object({
    token: t.String({ maxLength: 1_000 }),
    type: t.String({ maxLength: 200 }),
    url: t.Optional(t.Nullable(t.String({ maxLength: 8_192 }))),
    source: t.Optional(t.Nullable(t.String({ maxLength: 100 }))),
  }),
  { maxItems: MAX_REPORTED_TOKENS },
)
const githubReport = TypeCompiler.Compile(GithubReport)

const TokenVerdicts = t.Array(
  t.Object({
    token_hash: t.String({ description: 'The hex SHA-256 of the token' }),
    token_type: t.String(),
    label: t.Union([t.Literal('true_positive'), t.Literal('false_positive')]),
  }),
)

const LeakedKeysBody = t.Object({
  keys: t.Array(t.String({ maxLength: 200 }), {
    minItems: 1,
    maxItems: MAX_LEAKED_KEYS,
    error: `must list 1 to ${MAX_LEAKED_KEYS} keys`,
  }),
  url: t.String({ minLength: 1, maxLength: 2_048, error: 'must say where the keys were found (a URL), up to 2048 characters' }),
})
const leakedKeys = strictBody(LeakedKeysBody)

const INVALID_SIGNATURE =
  'The report is not signed by a key GitHub publishes for secret scanning: the Github-Public-Key-Identifier and Github-Public-Key-Signature headers must carry a current key identifier and the base64 ECDSA signature of the raw body.'

export interface LeakRoutesDeps {
  responder: LeakResponder
  keys: SecretScanningKeys
  limiter: RateLimiter
  clientAddress: ClientAddressOf
  /** Milliseconds on a clock that never jumps, for the reports' budget. */
  clock?: () => number
}

/**
 * Where keys found in public places are reported (docs/api.md, "When a key leaks"): GitHub's
 * secret-scanning partner endpoint, signed; and one for anybody, unsigned and budgeted.
 * Neither needs a key.
 */
export function leakRoutes({ responder, keys, limiter, clientAddress, clock = () => performance.now() }: LeakRoutesDeps) {
  return new Elysia({ name: 'leaks', prefix: '/security', detail: { tags: ['security'] } })
    .post(
      '/secret-scanning/github',
      async ({ request, set }) => {
        // The signature is over the raw bytes: read them (at most 1 MiB) before anything else.
        const body = await readBodyBytes(request)
        const identifier = request.headers.get('github-public-key-identifier')
        const signature = request.headers.get('github-public-key-signature')
        if (identifier === null || signature === null || !(await keys.verify(body, identifier, signature))) {
          throw new ApiError('invalid_signature', INVALID_SIGNATURE)
        }
        const report = parseJsonBody(body.toString('utf8'))
        if (!githubReport.Check(report)) {
          const { message, field } = validationProblem('body', githubReport.Errors(report))
          throw new ApiError('invalid_request', message, { field })
        }
        const tokens = report.map((entry) => ({
          token: entry.token,
          type: entry.type,
          url: entry.url ?? null,
          source: entry.source ?? 'github',
        }))
        return responder.respond(tokens, set.headers['x-request-id'] as string | undefined)
      },
      {
        parse: 'none',
        response: { 200: TokenVerdicts },
        detail: {
          summary: "GitHub's secret-scanning reports",
          description:
            "GitHub's partner program: a JSON array of {token, type, url, source}, signed over the raw body (headers Github-Public-Key-Identifier and Github-Public-Key-Signature, ECDSA P-256 SHA-256, base64 DER). Answers each token's label: true_positive for a private key the service issued, false_positive otherwise. A live private key is revoked (LEAKED_KEY_POLICY=revoke, the default) or flagged (notify). Up to 1,000 tokens and 1 MiB.",
        },
      },
    )
    .post(
      '/leaked-keys',
      async ({ request, set, server }) => {
        const outcome = await limiter.take(`leak-report ${clientAddress(request, server)}`, LEAK_REPORTS_PER_ADDRESS, clock())
        if (!outcome.allowed) throw rateLimited(outcome.retryAfterSeconds, `This address has sent ${outcome.limit} reports this hour`)
        const text = (await readBodyBytes(request)).toString('utf8')
        const body = { body: text === '' ? undefined : parseJsonBody(text) }
        leakedKeys.check(body)
        const report = body.body as typeof LeakedKeysBody.static
        const tokens = report.keys.map((token) => ({ token, type: 'keygate_api_key', url: report.url, source: 'report' }))
        await responder.respond(tokens, set.headers['x-request-id'] as string | undefined)
        set.status = 202
        // The same answer whatever the keys are: a report tells its sender nothing about them.
        return { received: report.keys.length }
      },
      {
        parse: 'none',
        response: { 202: t.Object({ received: t.Integer() }) },
        detail: {
          summary: 'Report keys found in a public place',
          description:
            'Anyone who finds a key may report it here: {"keys": [...], "url"}, up to 100 keys, 60 reports an hour from one address. Reported private keys are handled as a GitHub report. The answer is the same whatever the keys are.',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: leakedKeys.schema } },
          },
        },
      },
    )
}
