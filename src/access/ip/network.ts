import { formatIp, networkMask, parseIp } from './address.ts'

/**
 * The network an address most likely belongs to, as an allowedIps entry: its /24 for IPv4,
 * its /64 for IPv6 (one site or host network). Null for what is not an address.
 */
export function networkOf(address: string): string | null {
  const ip = parseIp(address)
  if (ip === null) return null
  const prefix = ip.family === 4 ? 24 : 64
  return `${formatIp({ family: ip.family, value: ip.value & networkMask(ip.family, prefix) })}/${prefix}`
}
