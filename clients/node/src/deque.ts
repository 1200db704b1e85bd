/**
 * A first-in first-out queue with cheap work at both ends: events are pushed at the back,
 * taken from the front, and (after a 413 split) put back at the front.
 */
export class Deque<T> {
  private items: (T | undefined)[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined
    this.compact()
    return item
  }

  /** The first `count` items, removed. */
  take(count: number): T[] {
    const end = Math.min(this.items.length, this.head + count)
    const taken = this.items.slice(this.head, end) as T[]
    this.items.fill(undefined, this.head, end)
    this.head = end
    this.compact()
    return taken
  }

  /** Puts `items` back at the front, in their order. */
  putBack(items: readonly T[]): void {
    if (items.length <= this.head) {
      this.head -= items.length
      for (let i = 0; i < items.length; i++) this.items[this.head + i] = items[i]
    } else {
      this.items = [...items, ...this.items.slice(this.head)]
      this.head = 0
    }
  }

  /** Drops the emptied front once it is most of the array, so memory follows what is held. */
  private compact(): void {
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }
}
