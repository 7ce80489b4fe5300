import type { IncomingMessage } from 'node:http';
import { BlockList } from 'node:net';
import { canonicalAddress, parseAddressRange, unmappedAddress } from '../common/ip-address';
import type { ResolvedOptions } from '../config/options';

/** An entry of `X-Forwarded-For` with a port (`1.2.3.4:5678`, `[2001:db8::1]:443`) or in brackets. */
const WITH_PORT = /^(?:\[([^\]]+)\](?::\d+)?|(\d{1,3}(?:\.\d{1,3}){3}):\d+)$/;

/** The address an `X-Forwarded-For` entry names, in one spelling per address; null when it names none. */
function forwardedAddress(entry: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  const bare = WITH_PORT.exec(entry);
  return canonicalAddress(bare ? (bare[1] ?? bare[2]) : entry);
}

/**
 * Who the client of a request is. Without trusted proxies, the socket's remote address. Behind
 * trusted reverse proxies (`trustedProxies`), a request from one of them comes from the last
 * address of `X-Forwarded-For` (every header line, in order) that is not itself a trusted proxy:
 * each proxy appends the address it was connected from, so everything left of the first address a
 * trusted proxy did not write is whatever the client chose to send. `X-Forwarded-For` from any
 * other address is ignored. docs/design.md#what-an-outsider-can-make-the-process-hold.
 */
export class ClientAddresses {
  private readonly trusted = new BlockList();
  private readonly anyTrusted: boolean;

  /** `trustedProxies` as resolveOptions returns them (`address/prefix`). */
  constructor(options: Pick<ResolvedOptions, 'trustedProxies'>) {
    for (const text of options.trustedProxies) {
      const range = parseAddressRange(text);
      if (typeof range === 'string') throw new Error(`trustedProxies: ${JSON.stringify(text)} ${range}`);
      this.trusted.addSubnet(range.address, range.prefix, range.family);
    }
    this.anyTrusted = options.trustedProxies.length > 0;
  }

  /** Whether `address` (a socket's remote address, any spelling) is one of the trusted proxies. */
  isTrustedProxy(address: string | undefined): boolean {
    if (!this.anyTrusted || address === undefined) return false;
    const canonical = canonicalAddress(address);
    return canonical !== null && this.trusted.check(canonical.address, canonical.family);
  }

  /**
   * The client's address of a request, for every per-client rule that can wait for the headers:
   * one spelling per address (an IPv4-mapped IPv6 address as the IPv4 one); `''` for a socket
   * already gone.
   */
  clientAddress(raw: IncomingMessage): string {
    const peer = raw.socket?.remoteAddress;
    if (peer === undefined) return '';
    if (!this.isTrustedProxy(peer)) return unmappedAddress(peer);
    return this.forwardedClient(unmappedAddress(peer), forwardedFor(raw.rawHeaders));
  }

  /**
   * The client behind a trusted proxy at `proxy`, from the entries of `X-Forwarded-For`: the last
   * one that is not a trusted proxy; every one trusted, the first; none, or one that names no
   * address where the client should be, the proxy itself (all such requests share its limits).
   */
  forwardedClient(proxy: string, entries: readonly string[]): string {
    for (let i = entries.length - 1; i >= 0; i--) {
      const hop = forwardedAddress(entries[i]);
      if (hop === null) return proxy;
      if (!this.trusted.check(hop.address, hop.family)) return hop.address;
    }
    return entries.length === 0 ? proxy : forwardedAddress(entries[0])!.address;
  }
}

/** The entries of every `X-Forwarded-For` line, in order, trimmed; empty ones left out. */
export function forwardedFor(rawHeaders: readonly string[]): string[] {
  const entries: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length !== 15 || rawHeaders[i].toLowerCase() !== 'x-forwarded-for') continue;
    for (const entry of rawHeaders[i + 1].split(',')) {
      const trimmed = entry.trim();
      if (trimmed !== '') entries.push(trimmed);
    }
  }
  return entries;
}
