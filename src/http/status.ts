import { ElysiaCustomStatusResponse, StatusMap } from 'elysia'

/** The status an answer goes out with: a `status()` value's, a Response's, else `set.status`. */
export function statusOf(value: unknown, setStatus: number | string | undefined): number {
  if (value instanceof ElysiaCustomStatusResponse) return numericStatus(value.code)
  if (value instanceof Response) return value.status
  return numericStatus(setStatus ?? 200)
}

function numericStatus(status: number | string): number {
  return typeof status === 'number' ? status : (StatusMap[status as keyof typeof StatusMap] ?? 200)
}
