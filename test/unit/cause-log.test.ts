import { describe, expect, test } from 'bun:test'
import { CauseLog } from '../../src/observability/cause-log.ts'
import { createLogger } from '../../src/observability/log.ts'

function captured(options: { maxCauses?: number } = {}) {
  const lines: Record<string, unknown>[] = []
  let now = 1_000_000
  const log = new CauseLog(createLogger({ write: (line) => lines.push(JSON.parse(line)) }), { now: () => now, ...options })
  return { lines, log, advance: (ms: number) => (now += ms) }
}

describe('CauseLog: one line a minute per cause', () => {
  test('the first line of a cause is written at once, its repeats within the minute are left out', () => {
    const { lines, log } = captured()
    for (let i = 0; i < 250; i++) log.write('warn', 'client gone on /a', 'a client hung up', { requestId: `req_${i}` })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'a client hung up', requestId: 'req_0' })
    expect(lines[0]).not.toHaveProperty('leftOut')
  })

  test('the next line after the minute says how many were left out', () => {
    const { lines, log, advance } = captured()
    for (let i = 0; i < 5; i++) log.write('error', 'x', 'request failed')
    advance(59_999)
    log.write('error', 'x', 'request failed')
    expect(lines).toHaveLength(1)
    advance(1)
    log.write('error', 'x', 'request failed', { requestId: 'req_later' })
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatchObject({ msg: 'request failed', requestId: 'req_later', leftOut: 5 })
    advance(60_000)
    log.write('error', 'x', 'request failed')
    expect(lines[2]).not.toHaveProperty('leftOut')
  })

  test('each cause has a minute of its own', () => {
    const { lines, log } = captured()
    log.write('error', 'route a', 'request failed', { route: '/a' })
    log.write('error', 'route b', 'request failed', { route: '/b' })
    log.write('error', 'route a', 'request failed', { route: '/a' })
    expect(lines.map((line) => line.route)).toEqual(['/a', '/b'])
  })

  test('holds at most maxCauses causes: past that it starts again', () => {
    const { lines, log } = captured({ maxCauses: 3 })
    for (const cause of ['a', 'b', 'c', 'd', 'a']) log.write('info', cause, cause)
    // 'd' cleared the table, so 'a' is new again: bounded memory costs a repeated line.
    expect(lines.map((line) => line.msg)).toEqual(['a', 'b', 'c', 'd', 'a'])
  })
})
