/**
 * A map that holds at most `max` entries and forgets the least recently used first, in
 * halves: entries live in a young and an old generation; a hit in the young one is a
 * single `Map.get`, a hit in the old one moves the entry back to the young one, and when
 * the young one is full the old one is dropped and the young one becomes old. So an entry
 * used within the last `max / 2` insertions is never forgotten, and nothing is reordered
 * on a young hit.
 *
 * Why not lru-cache (used here before): its `get` builds and destructures
 * an options object per call, and with a TTL it arms a timer per millisecond. On the hot
 * routes, which look up a key and a budget per request, that was about 0.4 µs a request
 * against 0.05 µs for this (bench/README.md, "The hot path at the contract's floor").
 */
export class RecentMap<K, V> {
  #young = new Map<K, V>()
  #old = new Map<K, V>()
  readonly #half: number

  constructor(max: number) {
    if (!(max >= 2)) throw new Error(`a RecentMap holds at least 2 entries, not ${max}`)
    this.#half = Math.floor(max / 2)
  }

  get(key: K): V | undefined {
    const young = this.#young.get(key)
    if (young !== undefined) return young
    const old = this.#old.get(key)
    if (old !== undefined) {
      this.#old.delete(key)
      this.#insert(key, old)
    }
    return old
  }

  has(key: K): boolean {
    return this.#young.has(key) || this.#old.has(key)
  }

  set(key: K, value: V): void {
    if (this.#young.has(key)) {
      this.#young.set(key, value)
      return
    }
    this.#old.delete(key)
    this.#insert(key, value)
  }

  delete(key: K): boolean {
    const young = this.#young.delete(key)
    return this.#old.delete(key) || young
  }

  clear(): void {
    this.#young.clear()
    this.#old.clear()
  }

  /** Entries held now (at most `max`). */
  get size(): number {
    return this.#young.size + this.#old.size
  }

  #insert(key: K, value: V): void {
    if (this.#young.size >= this.#half) {
      this.#old = this.#young
      this.#young = new Map()
    }
    this.#young.set(key, value)
  }
}
