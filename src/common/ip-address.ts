import { isIPv4, isIPv6, SocketAddress } from 'node:net';

export type AddressFamily = 'ipv4' | 'ipv6';

/** A subnet: `address` (its first address) and a prefix length; a single address has the full length. */
export interface AddressRange {
  address: string;
  prefix: number;
  family: AddressFamily;
}

/** `::ffff:1.2.3.4` (Node's spelling of an IPv4 client on a dual-stack socket), in its canonical form. */
const MAPPED_IPV4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/;

/**
 * One spelling per address, so that one client is one key whatever way it was written: IPv6
 * compressed and in lower case, without a zone (`%eth0`), and an IPv4-mapped IPv6 address as the
 * IPv4 address it carries. Null when `text` is not an IP address.
 */
export function canonicalAddress(text: string): { address: string; family: AddressFamily } | null {
  if (isIPv4(text)) return { address: text, family: 'ipv4' };
  if (!isIPv6(text)) return null;
  const address = new SocketAddress({ address: text, family: 'ipv6' }).address;
  const mapped = MAPPED_IPV4.exec(address);
  return mapped ? { address: mapped[1], family: 'ipv4' } : { address, family: 'ipv6' };
}

/**
 * A socket's remote address as one key per client: an IPv4-mapped address (what a dual-stack socket
 * reports for an IPv4 client) as the IPv4 one. Node already writes IPv6 addresses canonically.
 */
export function unmappedAddress(address: string): string {
  return address.startsWith('::ffff:') && MAPPED_IPV4.test(address) ? address.slice(7) : address;
}

/**
 * An address or a CIDR range (`10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1`), or what is wrong with
 * it (to follow the text quoted). An IPv4-mapped IPv6 range of at least 96 bits is the IPv4 range it carries. Bits past the
 * prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
 */
export function parseAddressRange(text: string): AddressRange | string {
  const slash = text.indexOf('/');
  const addressText = slash === -1 ? text : text.slice(0, slash);
  const prefixText = slash === -1 ? undefined : text.slice(slash + 1);
  if (addressText.includes('%')) return 'has a zone (%…); give the address without it';
  const canonical = canonicalAddress(addressText);
  if (!canonical) return 'is not an IP address or a CIDR range';
  const written: AddressFamily = isIPv4(addressText) ? 'ipv4' : 'ipv6';
  const bits = written === 'ipv4' ? 32 : 128;
  let prefix = bits;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) return `has a prefix length that is not 0–${bits}`;
    prefix = Number(prefixText);
  }
  if (written === 'ipv6' && canonical.family === 'ipv4') {
    // A range of mapped addresses wider than the mapped block is not an IPv4 range: keep it IPv6.
    if (prefix < 96) return { address: new SocketAddress({ address: addressText, family: 'ipv6' }).address, prefix, family: 'ipv6' };
    prefix -= 96;
  }
  return { address: canonical.address, prefix, family: canonical.family };
}

/** `address/prefix`, as parseAddressRange reads it back. */
export function formatAddressRange(range: AddressRange): string {
  return `${range.address}/${range.prefix}`;
}

/**
 * An address as a log line may show it: its network (`/24` of IPv4, `/48` of IPv6), enough to tell
 * a proxy's or a provider's range from another, not a person's own address.
 */
export function maskedAddress(address: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}\.\d{1,3}\.\d{1,3})\.\d{1,3}$/i.exec(address);
  if (v4) return `${v4[1]}.0/24`;
  if (address.includes(':')) return `${address.split(':').slice(0, 3).join(':')}::/48`;
  return address === '' ? '(unknown)' : '(not an address)';
}
