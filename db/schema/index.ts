// Every table, for the Drizzle handle's type (db/client.ts): the service's own and the event store's.
export * from './service.ts'
export * from './event-store.ts'
