/** Four decimal numbers 0-255 without leading zeros: the only IPv4 form an entry may use. */
export const IPV4_ADDRESS = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

/**
 * Parses `[v6]` strictly and returns its WHATWG serialization (`[::1]`), or null. Written
 * by hand because URL would accept zone ids and other forms entries may not use.
 */
export function parseIPv6Literal(bracketed: string): string | null {
  const inner = bracketed.slice(1, -1)
  if (!/^[0-9a-f:.]+$/.test(inner)) return null
  const halves = inner.split('::')
  if (halves.length > 2) return null
  const head = parsePieces(halves[0]!, halves.length === 1)
  const tail = halves.length === 2 ? parsePieces(halves[1]!, true) : []
  if (!head || !tail) return null
  let pieces: number[]
  if (halves.length === 2) {
    if (head.length + tail.length > 7) return null
    pieces = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
  } else {
    if (head.length !== 8) return null
    pieces = head
  }
  return `[${serializePieces(pieces)}]`
}

/** The 16-bit pieces of `a:b:c`; a dotted IPv4 tail counts as two. Null when malformed. */
function parsePieces(part: string, allowIPv4Tail: boolean): number[] | null {
  if (part === '') return []
  const pieces: number[] = []
  const groups = part.split(':')
  for (let index = 0; index < groups.length; index++) {
    const group = groups[index]!
    if (allowIPv4Tail && index === groups.length - 1 && group.includes('.')) {
      if (!IPV4_ADDRESS.test(group)) return null
      const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number]
      pieces.push((a << 8) | b, (c << 8) | d)
    } else if (/^[0-9a-f]{1,4}$/.test(group)) {
      pieces.push(parseInt(group, 16))
    } else {
      return null
    }
  }
  return pieces
}

/** WHATWG: compress the first longest run of two or more zero pieces. */
function serializePieces(pieces: number[]): string {
  let runStart = -1
  let runLength = 1
  for (let index = 0; index < 8; ) {
    if (pieces[index] !== 0) {
      index++
      continue
    }
    let end = index
    while (end < 8 && pieces[end] === 0) end++
    if (end - index > runLength) {
      runStart = index
      runLength = end - index
    }
    index = end
  }
  let serialized = ''
  for (let index = 0; index < 8; index++) {
    if (index === runStart) {
      serialized += index === 0 ? '::' : ':'
      index += runLength - 1
      continue
    }
    serialized += pieces[index]!.toString(16)
    if (index < 7) serialized += ':'
  }
  return serialized
}
