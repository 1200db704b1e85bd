import { afterAll } from 'bun:test'
import type { Service } from '../../src/app.ts'
import { ADMIN_TOKEN } from './service.ts'

// A service answering on 127.0.0.1 over real HTTP, and the calls tests make to it. Every
// service a file starts is stopped and drained after the file.

const started: Service[] = []
afterAll(async () => {
  for (const service of started) {
    await service.app.server?.stop(true)
    await service.drain()
  }
})

export interface Loopback {
  base: string
  /** A JSON request to `/api/v0...` with a key. */
  api(path: string, key: string, init?: { method?: string; body?: unknown; origin?: string }): Promise<Response>
  /** A JSON request to `/admin/v0...` with the operator token. */
  admin(path: string, init?: { method?: string; body?: unknown }): Promise<Response>
}

export function loopback(service: Service): Loopback {
  service.app.listen({ port: 0, hostname: '127.0.0.1' })
  started.push(service)
  const base = `http://127.0.0.1:${service.app.server!.port}`
  const send = (path: string, authorization: string, init: { method?: string; body?: unknown; origin?: string } = {}) =>
    fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        authorization,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(init.origin ? { origin: init.origin } : {}),
      },
      body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    })
  return {
    base,
    api: (path, key, init) => send(`/api/v0${path}`, `Bearer ${key}`, init),
    admin: (path, init) => send(`/admin/v0${path}`, `Bearer ${ADMIN_TOKEN}`, init),
  }
}
