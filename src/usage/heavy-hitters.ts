/**
 * The most frequent items of a stream in bounded memory: Space-Saving (Metwally, Agrawal
 * and El Abbadi, 2005). At most `capacity` items are tracked; an item not tracked when the
 * summary is full takes the place of the least counted one and inherits its count as
 * `error`. So for every tracked item `count - error <= true count <= count`, every item
 * seen more than total / capacity times is tracked, and the counts sum to the total.
 *
 * The usage recorder keeps one per key and hour for refused origins and addresses
 * (src/usage/recorder.ts): a flood of made-up values costs `capacity` entries, not one each.
 */
export interface HeavyHitter {
  readonly item: string
  /** Occurrences counted for this item: at least its true count. */
  count: number
  /** How much of `count` it inherited from the item it replaced: `count - error` is certain. */
  error: number
  /** The latest `at` it was seen. */
  lastSeen: number
}

export class HeavyHitters {
  /** A min-heap on count: the root is the entry a new item replaces. */
  private readonly heap: (HeavyHitter & { slot: number })[] = []
  private readonly byItem = new Map<string, HeavyHitter & { slot: number }>()
  /** Every occurrence counted, tracked or not. */
  total = 0

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError('a summary tracks at least one item')
  }

  get size(): number {
    return this.heap.length
  }

  /**
   * Counts one occurrence of `item`. A new item takes a new entry only when the summary is
   * below its capacity and `mayGrow` (the caller's bound across summaries); otherwise it
   * replaces the least counted entry. False when nothing could be counted: a new item, an
   * empty summary and no room to grow.
   */
  add(item: string, at: number, mayGrow = true): boolean {
    const known = this.byItem.get(item)
    if (known !== undefined) {
      known.count++
      if (at > known.lastSeen) known.lastSeen = at
      this.sink(known.slot)
      this.total++
      return true
    }
    if (this.heap.length < this.capacity && mayGrow) {
      const entry = { item, count: 1, error: 0, lastSeen: at, slot: this.heap.length }
      this.heap.push(entry)
      this.byItem.set(item, entry)
      this.rise(entry.slot)
      this.total++
      return true
    }
    const least = this.heap[0]
    if (least === undefined) return false
    this.byItem.delete(least.item)
    const entry = { item, count: least.count + 1, error: least.count, lastSeen: at, slot: 0 }
    this.heap[0] = entry
    this.byItem.set(item, entry)
    this.sink(0)
    this.total++
    return true
  }

  /** The tracked entries, in no particular order. */
  entries(): readonly HeavyHitter[] {
    return this.heap
  }

  private rise(slot: number): void {
    const heap = this.heap
    const entry = heap[slot]!
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1
      const parent = heap[parentSlot]!
      if (parent.count <= entry.count) break
      heap[slot] = parent
      parent.slot = slot
      slot = parentSlot
    }
    heap[slot] = entry
    entry.slot = slot
  }

  private sink(slot: number): void {
    const heap = this.heap
    const entry = heap[slot]!
    const length = heap.length
    for (;;) {
      const left = 2 * slot + 1
      if (left >= length) break
      const right = left + 1
      const child = right < length && heap[right]!.count < heap[left]!.count ? right : left
      if (heap[child]!.count >= entry.count) break
      heap[slot] = heap[child]!
      heap[slot]!.slot = slot
      slot = child
    }
    heap[slot] = entry
    entry.slot = slot
  }
}
