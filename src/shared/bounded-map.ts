/**
 * A map of at most `max` entries that forgets the least recently used first, in halves:
 * entries live in a young and an old generation; a hit in the old one moves the entry
 * back to the young one, and when the young one is full the old one is dropped and the
 * young one becomes old. An entry used within the last `max / 2` insertions is never
 * forgotten, and a hit in the young generation is one `Map.get` (bench/README.md,
 * "One bounded map, not lru-cache").
 */
export class BoundedMap<K, V> {
  #young = new Map<K, V>()
  #old = new Map<K, V>()
  readonly #half: number

  constructor(max: number) {
    if (!(max >= 2)) throw new Error(`a BoundedMap holds at least 2 entries, not ${max}`)
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
