import { openapi } from '@elysiajs/openapi'
import { errorStatus } from '../errors.ts'

const errorEnvelope = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: {
        code: {
          type: 'string',
          enum: Object.keys(errorStatus),
        },
        message: { type: 'string', description: 'What was seen and how to fix it' },
        requestId: { type: 'string', description: 'Also sent as the X-Request-Id header' },
      },
    },
  },
} as const

/**
 * The API reference, generated from the route schemas, as JSON at GET /openapi. No UI page:
 * the usual ones load their script from a CDN, which a closed network cannot reach.
 */
export const apiReference = openapi({
  path: '/openapi',
  specPath: '/openapi',
  provider: null,
  exclude: { paths: [/^\/dashboard/, /^\/sdk/] },
  documentation: {
    info: {
      title: 'Keygate engagement API',
      version: '0.1.0',
      description:
        'Every /api/v0 request carries "Authorization: Bearer <key>". Public keys (pk_) are limited to their allowed origins and the public endpoints; private keys (sk_) reach every endpoint within their scopes. Every error answer is {"error": {"code", "message", "requestId"}}.',
    },
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'A public (pk_...) or private (sk_...) key: the prefix and 20 to 40 letters and digits.',
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN), for /admin/v0 only.' },
      },
      schemas: { Error: errorEnvelope as never },
    },
  },
})
