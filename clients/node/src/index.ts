export type { components, paths } from './api.ts'
export { createClient, type ApiMethods, type ClientOptions, type KeygateClient } from './client.ts'
export type { Clock } from './clock.ts'
export {
  MAX_BATCH_SIZE,
  type DeliveryFailure,
  type DeliveryStats,
  type StampedEvent,
  type TrackEvent,
  type TrackOptions,
} from './delivery.ts'
export { KeygateError, type ClientErrorCode, type ErrorCode, type KeygateErrorFields } from './errors.ts'
export type { Failure, Fetch, RateLimit, Result, Success } from './http.ts'
export { operations, type Args, type Body, type CallOptions, type Data, type MethodName, type Params, type Route } from './operations.ts'
