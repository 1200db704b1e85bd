import type { RequestFacts } from '../access/chain.ts'
import type { ClientAddressOf, PeerSource } from '../shared/client-address.ts'

/**
 * What the gate reads of an HTTP request (src/access/chain.ts `RequestFacts`): its headers,
 * read once, and the client address, looked up only when a check asks for it (it costs a
 * system call, and only public keys' budgets and private keys' allowed IPs need it).
 */
class HttpRequestFacts implements RequestFacts {
  readonly authorization: string | null
  #address: string | undefined

  constructor(
    private readonly request: Request,
    readonly path: string,
    private readonly server: PeerSource | null,
    readonly origin: string | null,
    private readonly clientAddressOf: ClientAddressOf,
  ) {
    this.authorization = request.headers.get('authorization')
  }

  get method(): string {
    return this.request.method
  }

  clientAddress(): string {
    return (this.#address ??= this.clientAddressOf(this.request, this.server))
  }
}

export function describeRequest(
  request: Request,
  path: string,
  server: PeerSource | null,
  origin: string | null,
  clientAddressOf: ClientAddressOf,
): RequestFacts {
  return new HttpRequestFacts(request, path, server, origin, clientAddressOf)
}
