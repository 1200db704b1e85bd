import { describe, expect, test } from 'bun:test'
import { createGroupCommitter } from '../../src/events/group-commit.ts'

function deferred() {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** An insert the test finishes by hand: each call waits until the test resolves or rejects it. */
function controlledInsert() {
  const calls: { rows: readonly string[]; done: ReturnType<typeof deferred> }[] = []
  return {
    calls,
    insert(rows: readonly string[]) {
      const done = deferred()
      calls.push({ rows, done })
      return done.promise
    },
  }
}

const outcome = (promise: Promise<void>) =>
  promise.then(
    () => 'ok',
    (e: { message: string; status?: number }) => e.status ?? e.message,
  )
// The end of the current event-loop turn: the committer starts its inserts there.
const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Answers `count` inserts from `db.calls[first]` on, each a turn after the one before, as
 * the committer retries a failed batch's requests alone: the one holding 'poison' fails,
 * the rest commit.
 */
async function answerRetries(db: ReturnType<typeof controlledInsert>, first: number, count: number): Promise<void> {
  for (let i = first; i < first + count; i++) {
    await tick()
    const call = db.calls[i]!
    if (call.rows.includes('poison')) call.done.reject(new Error('invalid byte sequence'))
    else call.done.resolve()
  }
}

describe('the group committer', () => {
  test("gathers one turn's writes into one insert at the turn's end, and the writes that wait behind it into the next", async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const first = [committer.write('a', ['a1']), committer.write('b', ['b1'])]
    // Nothing is written before the turn ends: the requests of one socket poll go together.
    expect(db.calls).toHaveLength(0)
    await tick()
    expect(db.calls.map((c) => c.rows)).toEqual([['a1', 'b1']])
    const waiting = [committer.write('a', ['a2']), committer.write('a', ['a3', 'a4']), committer.write('a', ['a5'])]
    await tick()
    // The one slot is busy: they wait for it.
    expect(db.calls).toHaveLength(1)
    expect(committer.stats.queuedRows).toBe(6)
    db.calls[0]!.done.resolve()
    await Promise.all(first)
    await tick()
    expect(db.calls.map((c) => c.rows)).toEqual([
      ['a1', 'b1'],
      ['a2', 'a3', 'a4', 'a5'],
    ])
    db.calls[1]!.done.resolve()
    await Promise.all(waiting)
    expect(committer.stats).toMatchObject({ commits: 2, rows: 6, requests: 5, queuedRows: 0 })
  })

  test('caps a batch by rows; a single larger write still goes whole', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxBatchRows: 3 })
    const all = [
      committer.write('a', ['0']),
      committer.write('a', ['1', '2']),
      committer.write('a', ['3', '4']),
      committer.write('a', ['5', '6', '7', '8']),
    ]
    for (let i = 0; i < 3; i++) {
      await tick()
      db.calls[i]?.done.resolve()
    }
    await Promise.all(all)
    expect(db.calls.map((c) => c.rows)).toEqual([
      ['0', '1', '2'],
      ['3', '4'],
      ['5', '6', '7', '8'],
    ])
  })

  test('takes from businesses in turn: a flood cannot keep another business out of the next insert', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxBatchRows: 4 })
    const first = committer.write('flood', ['f0'])
    await tick()
    const flood = Array.from({ length: 6 }, (_, i) => committer.write('flood', [`f${i + 1}a`, `f${i + 1}b`]))
    const small = committer.write('shop', ['s1'])
    db.calls[0]!.done.resolve()
    await first
    await tick()
    // The next insert holds the shop's event although six flood requests queued first.
    expect(db.calls[1]!.rows).toContain('s1')
    db.calls[1]!.done.resolve()
    await small
    for (let i = 2; i < 6; i++) {
      await tick()
      db.calls[i]?.done.resolve()
    }
    await Promise.all(flood)
  })

  test('a full queue answers 503 at once and writes nothing of that request', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 4, maxTenantRows: 4 })
    const running = committer.write('a', ['1', '2'])
    await tick()
    const queued = committer.write('b', ['3', '4'])
    expect(await outcome(committer.write('c', ['5']))).toBe(503)
    expect(committer.stats).toMatchObject({ refusedFull: 1, queuedRows: 4 })
    db.calls[0]!.done.resolve()
    await running
    await tick()
    db.calls[1]!.done.resolve()
    await queued
    expect(db.calls.flatMap((c) => c.rows)).toEqual(['1', '2', '3', '4'])
    // Room again once committed.
    const later = committer.write('c', ['5'])
    await tick()
    db.calls[2]!.done.resolve()
    expect(await outcome(later)).toBe('ok')
  })

  test('one business may fill only its share: another still gets in', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 10, maxTenantRows: 5 })
    const flood = [committer.write('flood', ['1', '2', '3']), committer.write('flood', ['4', '5'])]
    expect(await outcome(committer.write('flood', ['6']))).toBe(503)
    const shop = committer.write('shop', ['s'])
    await tick()
    db.calls[0]!.done.resolve()
    await Promise.all([...flood, shop])
    expect(db.calls.flatMap((c) => c.rows)).toContain('s')
  })

  test('a failed insert fails only the request at fault: each request of the batch is tried alone', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const first = committer.write('a', ['a1'])
    await tick()
    const carried = [committer.write('a', ['a2']), committer.write('bad', ['poison']), committer.write('b', ['b1'])].map(outcome)
    db.calls[0]!.done.resolve()
    await first
    await tick()
    db.calls[1]!.done.reject(new Error('invalid byte sequence'))
    await answerRetries(db, 2, 3)
    expect(await Promise.all(carried)).toEqual(['ok', 'invalid byte sequence', 'ok'])
    expect(committer.stats).toMatchObject({ rows: 3, requests: 3, queuedRows: 0 })
  })

  test('each write resolves only once its rows are committed, also when retried alone', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const settled: string[] = []
    const writes = [committer.write('a', ['a1']), committer.write('bad', ['poison']), committer.write('b', ['b1', 'b2'])].map((write, i) =>
      write.then(
        () => {
          settled.push(`${i}`)
          return 'committed'
        },
        (error: Error) => error.message,
      ),
    )
    await tick()
    await tick()
    // Nothing is answered before the commit that carries it.
    expect(db.calls).toHaveLength(1)
    expect(settled).toEqual([])
    db.calls[0]!.done.reject(new Error('invalid byte sequence'))
    await answerRetries(db, 1, 3)
    expect(await Promise.all(writes)).toEqual(['committed', 'invalid byte sequence', 'committed'])
    expect(settled.sort()).toEqual(['0', '2'])
    expect(committer.stats).toMatchObject({ rows: 3, requests: 2, queuedRows: 0 })
  })

  test('a database that is down fails the batch without retrying each request against it', async () => {
    const db = controlledInsert()
    const down = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' })
    const committer = createGroupCommitter<string>({ insert: db.insert, isUnavailable: (e) => e === down })
    const first = committer.write('a', ['a1'])
    await tick()
    const carried = [committer.write('a', ['a2']), committer.write('b', ['b1'])].map(outcome)
    db.calls[0]!.done.resolve()
    await first
    await tick()
    db.calls[1]!.done.reject(down)
    expect(await Promise.all(carried)).toEqual(['connection refused', 'connection refused'])
    expect(db.calls).toHaveLength(2)
  })

  test('a client gone before its rows were taken is dropped; one whose rows are in an insert is committed', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, checkClientAfterMs: 0 })
    const inFlight = new AbortController()
    const queued = new AbortController()
    const first = committer.write('a', ['a1'], inFlight)
    await tick()
    const second = outcome(committer.write('a', ['a2'], queued))
    const third = committer.write('b', ['b1'])
    inFlight.abort()
    queued.abort()
    expect(committer.stats).toMatchObject({ queuedRows: 3, abandoned: 0 })
    // The next insert finds the second's client gone: it is dropped and told so, not written.
    db.calls[0]!.done.resolve()
    await first
    expect(await second).toBe(503)
    expect(committer.stats).toMatchObject({ abandoned: 1 })
    db.calls[1]!.done.resolve()
    await third
    expect(db.calls.map((c) => c.rows)).toEqual([['a1'], ['b1']])
    expect(committer.stats).toMatchObject({ queuedRows: 0, rows: 2 })
  })

  test("a write taken at the end of its turn never reads its client's signal; one that waited does", async () => {
    const db = controlledInsert()
    let now = 0
    const committer = createGroupCommitter<string>({ insert: db.insert, checkClientAfterMs: 250, clock: () => now })
    const reads = { first: 0, second: 0 }
    const client = (name: keyof typeof reads) => ({
      get signal() {
        reads[name]++
        return new AbortController().signal
      },
    })
    const first = committer.write('a', ['a1'], client('first'))
    await tick()
    const second = committer.write('a', ['a2'], client('second'))
    expect(reads).toEqual({ first: 0, second: 0 })
    now += 250
    db.calls[0]!.done.resolve()
    await first
    await tick()
    // Read once, when the next insert took the waiting rows.
    expect(reads).toEqual({ first: 0, second: 1 })
    db.calls[1]!.done.resolve()
    await second
    expect(db.calls.map((c) => c.rows)).toEqual([['a1'], ['a2']])
  })

  test("rows that waited less than checkClientAfterMs are written without asking their client; past it, a gone client's are dropped", async () => {
    const db = controlledInsert()
    let now = 0
    const committer = createGroupCommitter<string>({ insert: db.insert, checkClientAfterMs: 250, clock: () => now })
    let reads = 0
    const gone = new AbortController()
    gone.abort()
    const client = {
      get signal() {
        reads++
        return gone.signal
      },
    }
    const first = committer.write('a', ['a1'])
    await tick()
    const brief = committer.write('a', ['a2'], client)
    now += 249
    db.calls[0]!.done.resolve()
    await first
    await tick()
    // Taken 249 ms after it began to wait: written, its client never asked.
    db.calls[1]!.done.resolve()
    await brief
    expect(reads).toBe(0)
    await tick()
    const third = committer.write('a', ['a3'])
    const long = outcome(committer.write('a', ['a4'], client))
    now += 250
    await tick()
    db.calls[2]!.done.resolve()
    await third
    expect(await long).toBe(503)
    expect(reads).toBe(1)
    expect(db.calls.map((c) => c.rows)).toEqual([['a1'], ['a2'], ['a3']])
  })

  test('a queue that never empties under steady load writes every request once, in order', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxBatchRows: 3 })
    const written: Promise<void>[] = []
    let next = 0
    const more = (n: number) => {
      for (let i = 0; i < n; i++) written.push(committer.write('steady', [`r${next++}`]))
    }
    more(10)
    await tick()
    // Each insert takes 3 rows; 4 more arrive meanwhile: the queue grows and is never empty.
    for (let round = 0; round < 200; round++) {
      more(4)
      db.calls.at(-1)!.done.resolve()
      await tick()
    }
    while (committer.stats.queuedRows > 0) {
      db.calls.at(-1)!.done.resolve()
      await tick()
    }
    await Promise.all(written)
    expect(db.calls.flatMap((c) => c.rows)).toEqual(Array.from({ length: next }, (_, i) => `r${i}`))
  })

  test('more than one insert in flight when allowed', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, concurrency: 2 })
    const writes = [committer.write('a', ['1'])]
    await tick()
    writes.push(committer.write('b', ['2']))
    await tick()
    // The second turn's write found the first insert still running: a second one took it.
    expect(db.calls.map((c) => c.rows)).toEqual([['1'], ['2']])
    writes.push(committer.write('c', ['3']))
    await tick()
    // Both slots busy: the third waits for one.
    expect(db.calls).toHaveLength(2)
    db.calls[0]!.done.resolve()
    db.calls[1]!.done.resolve()
    await tick()
    await tick()
    db.calls[2]!.done.resolve()
    await Promise.all(writes)
    expect(committer.stats.rows).toBe(3)
  })

  test('close waits for queued writes, then refuses new ones with 503 unavailable', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const running = committer.write('a', ['1'])
    await tick()
    const queued = [running, committer.write('a', ['2']), committer.write('b', ['3'])]
    // Closed before the turn ended: what waited for it is taken at once, not after close.
    const closed = committer.close()
    db.calls[0]!.done.resolve()
    await tick()
    expect(db.calls.map((c) => c.rows)).toEqual([['1'], ['2', '3']])
    db.calls[1]!.done.resolve()
    await closed
    await Promise.all(queued)
    expect(await outcome(committer.write('a', ['4']))).toBe(503)
    await tick()
    expect(db.calls).toHaveLength(2)
  })
})

/** What a refusal says: status, code, message and headers, as the route's error answer carries them. */
const refusal = (promise: Promise<void>) =>
  promise.then(
    () => 'ok',
    (e: { status: number; code: string; message: string; headers?: Record<string, string> }) => ({
      status: e.status,
      code: e.code,
      message: e.message,
      headers: e.headers,
    }),
  )

describe('the group committer: bounds, turns and answers', () => {
  test("by default a business may hold half the queue's rows", async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 10 })
    const held = [committer.write('flood', ['1', '2', '3']), committer.write('flood', ['4', '5'])]
    expect(() => committer.checkRoom('flood')).toThrow()
    expect(await outcome(committer.write('flood', ['6']))).toBe(503)
    expect(() => committer.checkRoom('shop')).not.toThrow()
    const shop = committer.write('shop', ['s1', 's2', 's3', 's4', 's5'])
    await tick()
    db.calls[0]!.done.resolve()
    await Promise.all([...held, shop])
    // In turn: the flood's first request, the shop's, the flood's second.
    expect(db.calls.map((c) => c.rows)).toEqual([['1', '2', '3', 's1', 's2', 's3', 's4', 's5', '4', '5']])
  })

  test('checkRoom refuses at the queue bound and at the business share exactly, not one row before', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 6, maxTenantRows: 3 })
    void committer.write('a', ['1', '2'])
    expect(() => committer.checkRoom('a')).not.toThrow()
    void committer.write('a', ['3'])
    expect(await refusal(Promise.resolve().then(() => committer.checkRoom('a')))).toEqual({
      status: 503,
      code: 'unavailable',
      message: 'Too many events are waiting to be written; nothing of this request was written. Retry after the delay in Retry-After.',
      headers: { 'retry-after': '1' },
    })
    void committer.write('b', ['4', '5'])
    expect(() => committer.checkRoom('c')).not.toThrow()
    void committer.write('c', ['6'])
    expect(() => committer.checkRoom('d')).toThrow()
    expect(committer.stats.refusedFull).toBe(2)
  })

  test('a request larger than the whole queue goes alone into an empty one', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 4, maxTenantRows: 2 })
    const big = committer.write('a', ['1', '2', '3', '4', '5', '6'])
    expect(await outcome(committer.write('b', ['7']))).toBe(503)
    await tick()
    db.calls[0]!.done.resolve()
    expect(await outcome(big)).toBe('ok')
    expect(db.calls.map((c) => c.rows)).toEqual([['1', '2', '3', '4', '5', '6']])
  })

  test('an empty write resolves at once and inserts nothing', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    expect(await outcome(committer.write('a', []))).toBe('ok')
    await tick()
    expect(db.calls).toHaveLength(0)
    expect(committer.stats).toMatchObject({ queuedRows: 0, requests: 0 })
  })

  test("a business's rows leave its share when committed: it may fill the share again while others wait", async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 10, maxTenantRows: 2 })
    const first = committer.write('a', ['1', '2'])
    await tick()
    db.calls[0]!.done.resolve()
    await first
    const other = committer.write('b', ['3'])
    const again = outcome(committer.write('a', ['4', '5']))
    await tick()
    db.calls[1]!.done.resolve()
    expect(await again).toBe('ok')
    await other
    expect(db.calls.map((c) => c.rows)).toEqual([
      ['1', '2'],
      ['3', '4', '5'],
    ])
  })

  test("rows in flight count against their business's share until committed", async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxQueuedRows: 10, maxTenantRows: 2, concurrency: 2 })
    const first = committer.write('a', ['1'])
    await tick()
    const second = committer.write('a', ['2'])
    await tick()
    expect(db.calls.map((c) => c.rows)).toEqual([['1'], ['2']])
    db.calls[0]!.done.resolve()
    await first
    // One row of a's still in flight: two more would make three.
    expect(await outcome(committer.write('a', ['3', '4']))).toBe(503)
    db.calls[1]!.done.resolve()
    await second
  })

  test('businesses that emptied their queues line up again in the order their next writes arrive', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const first = [committer.write('a', ['a1']), committer.write('b', ['b1'])]
    await tick()
    db.calls[0]!.done.resolve()
    await Promise.all(first)
    const second = [committer.write('b', ['b2']), committer.write('a', ['a2'])]
    await tick()
    db.calls[1]!.done.resolve()
    await Promise.all(second)
    expect(db.calls.map((c) => c.rows)).toEqual([
      ['a1', 'b1'],
      ['b2', 'a2'],
    ])
  })

  test('a batch takes one request of each business in turn, round after round, until it is full', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const all = [committer.write('a', ['a1']), committer.write('a', ['a2']), committer.write('b', ['b1']), committer.write('b', ['b2'])]
    await tick()
    expect(db.calls.map((c) => c.rows)).toEqual([['a1', 'b1', 'a2', 'b2']])
    db.calls[0]!.done.resolve()
    await Promise.all(all)
  })

  test('the business served last goes to the back of the line for the next batch', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxBatchRows: 2 })
    const all = ['a', 'b', 'c'].flatMap((tenant) => [committer.write(tenant, [`${tenant}1`]), committer.write(tenant, [`${tenant}2`])])
    for (let i = 0; i < 3; i++) {
      await tick()
      db.calls[i]!.done.resolve()
    }
    await Promise.all(all)
    expect(db.calls.map((c) => c.rows)).toEqual([
      ['a1', 'b1'],
      ['c1', 'a2'],
      ['b2', 'c2'],
    ])
  })

  test('free slots each take a batch in the same turn', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxBatchRows: 1, concurrency: 2 })
    const all = [committer.write('a', ['1']), committer.write('b', ['2']), committer.write('c', ['3'])]
    await tick()
    expect(db.calls.map((c) => c.rows)).toEqual([['1'], ['2']])
    db.calls[0]!.done.resolve()
    db.calls[1]!.done.resolve()
    await tick()
    db.calls[2]!.done.resolve()
    await Promise.all(all)
  })

  test('a batch of one request that fails is not tried again', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const only = outcome(committer.write('a', ['poison']))
    await tick()
    db.calls[0]!.done.reject(new Error('invalid byte sequence'))
    expect(await only).toBe('invalid byte sequence')
    await tick()
    expect(db.calls).toHaveLength(1)
    expect(committer.stats).toMatchObject({ queuedRows: 0, commits: 0 })
  })

  test('an insert that throws before it returns a promise fails its batch like one that rejects', async () => {
    let calls = 0
    const committer = createGroupCommitter<string>({
      insert: () => {
        calls++
        throw new Error('bind message has 2 parameters')
      },
    })
    expect(await outcome(committer.write('a', ['1']))).toBe('bind message has 2 parameters')
    expect(calls).toBe(1)
    expect(committer.stats.queuedRows).toBe(0)
  })

  test('a client gone is told so in words, and counted', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, checkClientAfterMs: 0 })
    const first = committer.write('a', ['1'])
    await tick()
    const gone = new AbortController()
    const dropped = refusal(committer.write('a', ['2'], gone))
    gone.abort()
    db.calls[0]!.done.resolve()
    await first
    expect(await dropped).toEqual({
      status: 503,
      code: 'unavailable',
      message: 'The client went away before its events were written; nothing was written.',
      headers: undefined,
    })
  })

  test('by default a waiting client is asked after 250 ms, counted from when it began to wait', async () => {
    const db = controlledInsert()
    // A clock that does not start at 0: waits are measured from the write, not from the epoch.
    let now = 10_000
    const committer = createGroupCommitter<string>({ insert: db.insert, clock: () => now })
    const gone = new AbortController()
    gone.abort()
    const first = committer.write('a', ['1'])
    await tick()
    const brief = committer.write('a', ['2'], gone)
    now += 249
    db.calls[0]!.done.resolve()
    await first
    await tick()
    db.calls[1]!.done.resolve()
    expect(await outcome(brief)).toBe('ok')
    const third = committer.write('a', ['3'])
    await tick()
    const long = outcome(committer.write('a', ['4'], gone))
    now += 250
    db.calls[2]!.done.resolve()
    await third
    expect(await long).toBe(503)
    expect(db.calls.map((c) => c.rows)).toEqual([['1'], ['2'], ['3']])
  })

  test('close waits for every insert in flight, and answers after the last', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert, maxBatchRows: 1, concurrency: 2 })
    const writes = [committer.write('a', ['1']), committer.write('b', ['2'])]
    await tick()
    let closed = false
    const closing = committer.close().then(() => {
      closed = true
    })
    db.calls[0]!.done.resolve()
    await writes[0]
    await tick()
    expect(closed).toBe(false)
    db.calls[1]!.done.resolve()
    await closing
    expect(closed).toBe(true)
    expect(await refusal(committer.write('a', ['3']))).toEqual({
      status: 503,
      code: 'unavailable',
      message: 'The service is shutting down; nothing was written. Retry in a moment.',
      headers: { 'retry-after': '1' },
    })
  })

  test('close with one insert in flight waits for it', async () => {
    const db = controlledInsert()
    const committer = createGroupCommitter<string>({ insert: db.insert })
    const write = committer.write('a', ['1'])
    await tick()
    let closed = false
    const closing = committer.close().then(() => {
      closed = true
    })
    await tick()
    expect(closed).toBe(false)
    db.calls[0]!.done.resolve()
    await Promise.all([write, closing])
    expect(closed).toBe(true)
  })
})
