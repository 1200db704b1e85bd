import { Type, type IntegerOptions } from '@sinclair/typebox'

/**
 * A whole number in a JSON body, and only a JSON number: Elysia's `t.Integer` is
 * `anyOf [integer-as-text, integer]` and took `"5"` for 5, while bodies are never coerced
 * (docs/api.md, "Calling the API"). Query strings keep their own text-shaped schemas.
 */
export function BodyInteger(options: IntegerOptions & { error?: string }) {
  return Type.Integer(options)
}
