import { Elysia } from 'elysia'

// Placeholder until the tracking snippet lands.
export function sdkRoutes() {
  return new Elysia({ name: 'sdk' })
}
