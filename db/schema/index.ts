// Every table of the service, one file per area; drizzle-kit reads this entry point.
export * from './core.ts'
export * from './flows.ts'
