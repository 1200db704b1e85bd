import openapiTS, { astToString } from 'openapi-typescript'

/**
 * TypeScript types of an OpenAPI document, as a backend developer generates them for
 * openapi-fetch. Lives here because openapi-typescript builds on the TypeScript 5 compiler
 * API, which this folder's own dependencies provide (the project compiles with TypeScript 7).
 */
export async function generateTypes(document: object): Promise<string> {
  return astToString(await openapiTS(document as Parameters<typeof openapiTS>[0]))
}
