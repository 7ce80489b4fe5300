import type { IncomingMessage } from 'node:http';
import { canonicalAddress, parseAddressRange, unmappedAddress } from '../common/ip-address';
import { ClientAddresses, forwardedFor } from './client-address';
import { checkTrustedProxies } from '../config/validate';

/** A request as the guard sees it: a socket's address and the raw header lines. */
function request(remoteAddress: string | undefined, headers: Array<[string, string]> = []): IncomingMessage {
  return { socket: { remoteAddress }, rawHeaders: headers.flat() } as unknown as IncomingMessage;
}

const xff = (...values: string[]): Array<[string, string]> => values.map((v) => ['X-Forwarded-For', v]);

describe('canonicalAddress and parseAddressRange', () => {
  it('writes each address one way: IPv6 compressed and lower case, IPv4-mapped as IPv4, no zone', () => {
    expect(canonicalAddress('10.1.2.3')).toEqual({ address: '10.1.2.3', family: 'ipv4' });
    expect(canonicalAddress('2001:0DB8:0:0:0:0:0:1')).toEqual({ address: '2001:db8::1', family: 'ipv6' });
    expect(canonicalAddress('::ffff:1.2.3.4')).toEqual({ address: '1.2.3.4', family: 'ipv4' });
    expect(canonicalAddress('::FFFF:0102:0304')).toEqual({ address: '1.2.3.4', family: 'ipv4' });
    expect(canonicalAddress('fe80::1%eth0')).toEqual({ address: 'fe80::1', family: 'ipv6' });
    for (const junk of ['', 'unknown', 'localhost', '1.2.3', '1.2.3.256', '01.2.3.4', '1.2.3.4 ', '_hidden', '::g']) {
      expect([junk, canonicalAddress(junk)]).toEqual([junk, null]);
    }
    expect(unmappedAddress('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(unmappedAddress('::1')).toBe('::1');
    expect(unmappedAddress('127.0.0.2')).toBe('127.0.0.2');
  });

  it('reads addresses and CIDR ranges of both families', () => {
    expect(parseAddressRange('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseAddressRange('127.0.0.1')).toEqual({ address: '127.0.0.1', prefix: 32, family: 'ipv4' });
    expect(parseAddressRange('0.0.0.0/0')).toEqual({ address: '0.0.0.0', prefix: 0, family: 'ipv4' });
    expect(parseAddressRange('2001:DB8::/32')).toEqual({ address: '2001:db8::', prefix: 32, family: 'ipv6' });
    expect(parseAddressRange('::1')).toEqual({ address: '::1', prefix: 128, family: 'ipv6' });
    // Mapped: the IPv4 range it carries.
    expect(parseAddressRange('::ffff:10.0.0.1')).toEqual({ address: '10.0.0.1', prefix: 32, family: 'ipv4' });
    expect(parseAddressRange('::ffff:10.0.0.0/104')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
  });

  it.each([
    ['10.0.0.0/33', 'has a prefix length that is not 0–32'],
    ['::/129', 'has a prefix length that is not 0–128'],
    ['10.0.0.0/', 'has a prefix length that is not 0–32'],
    ['10.0.0.0/8/8', 'has a prefix length that is not 0–32'],
    ['10.0.0.0/-1', 'has a prefix length that is not 0–32'],
    ['proxy.internal', 'is not an IP address or a CIDR range'],
    ['10.0.0', 'is not an IP address or a CIDR range'],
    ['fe80::1%eth0', 'has a zone (%…); give the address without it'],
  ])('refuses %j', (text, problem) => {
    expect(parseAddressRange(text)).toBe(problem);
  });
});

describe('checkTrustedProxies', () => {
  it('none by default; each entry written address/prefix, trimmed, repeats dropped', () => {
    expect(checkTrustedProxies('trustedProxies', undefined)).toEqual([]);
    expect(checkTrustedProxies('trustedProxies', [])).toEqual([]);
    expect(checkTrustedProxies('TRUSTED_PROXIES', [' 10.0.0.0/8', '::1 ', '::ffff:192.168.1.1', '10.0.0.0/8', '2001:db8::/48'])).toEqual([
      '10.0.0.0/8',
      '::1/128',
      '192.168.1.1/32',
      '2001:db8::/48',
    ]);
  });

  it.each([
    ['10.0.0.0/8', 'TRUSTED_PROXIES: must be a list of addresses and CIDR ranges, such as 10.0.0.0/8,::1'],
    [[''], 'TRUSTED_PROXIES: entry #1 is empty or not a string'],
    [['10.0.0.1', 7], 'TRUSTED_PROXIES: entry #2 is empty or not a string'],
    [['10.0.0.1', 'nginx'], 'TRUSTED_PROXIES: entry #2 "nginx" is not an IP address or a CIDR range'],
    [['10.0.0.1/40'], 'TRUSTED_PROXIES: entry #1 "10.0.0.1/40" has a prefix length that is not 0–32'],
  ])('refuses %j in one line naming the setting', (value, message) => {
    expect(() => checkTrustedProxies('TRUSTED_PROXIES', value)).toThrow(message);
  });
});

describe('forwardedFor', () => {
  it('reads every X-Forwarded-For line in order, whatever its case, each entry trimmed, empty ones left out', () => {
    const raw = ['Host', 'x', 'X-Forwarded-For', '1.1.1.1, 2.2.2.2', 'x-forwarded-for', ' 3.3.3.3 ,, ', 'X-Forwarded-Host', '9.9.9.9', 'X-FORWARDED-FOR', '4.4.4.4'];
    expect(forwardedFor(raw)).toEqual(['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4']);
    expect(forwardedFor(['Host', 'x'])).toEqual([]);
  });
});

describe('ClientAddresses', () => {
  describe('without trusted proxies', () => {
    const clients = new ClientAddresses({ trustedProxies: [] });

    it('the client is the socket address; X-Forwarded-For changes nothing', () => {
      expect(clients.clientAddress(request('203.0.113.7', xff('198.51.100.1')))).toBe('203.0.113.7');
      expect(clients.clientAddress(request('::ffff:203.0.113.7', xff('198.51.100.1')))).toBe('203.0.113.7');
      expect(clients.clientAddress(request('2001:db8::7'))).toBe('2001:db8::7');
      expect(clients.clientAddress(request(undefined))).toBe('');
      expect(clients.isTrustedProxy('127.0.0.1')).toBe(false);
    });
  });

  describe('behind trusted proxies 10.0.0.0/8 and 2001:db8::1', () => {
    const clients = new ClientAddresses({ trustedProxies: checkTrustedProxies('trustedProxies', ['10.0.0.0/8', '2001:db8::1']) });

    it('knows the proxies, in every spelling Node reports them', () => {
      expect(['10.0.0.1', '10.255.0.9', '::ffff:10.1.2.3', '2001:db8::1', '2001:DB8:0::1'].map((a) => clients.isTrustedProxy(a))).toEqual([true, true, true, true, true]);
      expect(['11.0.0.1', '2001:db8::2', '::ffff:11.0.0.1', 'junk', undefined].map((a) => clients.isTrustedProxy(a))).toEqual([false, false, false, false, false]);
    });

    it('from a proxy: the last entry that is not a trusted proxy', () => {
      expect(clients.clientAddress(request('10.0.0.1', xff('203.0.113.7')))).toBe('203.0.113.7');
      // What the client wrote itself, left of what the proxy appended, is ignored.
      expect(clients.clientAddress(request('10.0.0.1', xff('198.51.100.1, 203.0.113.7')))).toBe('203.0.113.7');
      // Through two proxies: the inner one's address is skipped.
      expect(clients.clientAddress(request('10.0.0.1', xff('198.51.100.1, 203.0.113.7, 10.0.0.2')))).toBe('203.0.113.7');
      // Over several header lines, as one list.
      expect(clients.clientAddress(request('10.0.0.1', xff('198.51.100.1', '203.0.113.7', '10.0.0.2')))).toBe('203.0.113.7');
      expect(clients.clientAddress(request('::ffff:10.0.0.1', xff('2001:DB8::7, 2001:db8::1')))).toBe('2001:db8::7');
    });

    it('entries with a port or in brackets name their address; a mapped one its IPv4 address', () => {
      expect(clients.clientAddress(request('10.0.0.1', xff('203.0.113.7:51234')))).toBe('203.0.113.7');
      expect(clients.clientAddress(request('10.0.0.1', xff('[2001:db8::7]:443')))).toBe('2001:db8::7');
      expect(clients.clientAddress(request('10.0.0.1', xff('[2001:db8::7]')))).toBe('2001:db8::7');
      expect(clients.clientAddress(request('10.0.0.1', xff('::ffff:203.0.113.7')))).toBe('203.0.113.7');
    });

    it('every entry trusted: the first; no header, or garbage where the client should be: the proxy itself', () => {
      expect(clients.clientAddress(request('10.0.0.1', xff('10.0.0.3, 10.0.0.2')))).toBe('10.0.0.3');
      expect(clients.clientAddress(request('10.0.0.1'))).toBe('10.0.0.1');
      expect(clients.clientAddress(request('::ffff:10.0.0.1'))).toBe('10.0.0.1');
      expect(clients.clientAddress(request('10.0.0.1', xff('')))).toBe('10.0.0.1');
      expect(clients.clientAddress(request('10.0.0.1', xff('unknown')))).toBe('10.0.0.1');
      expect(clients.clientAddress(request('10.0.0.1', xff('203.0.113.7, _hidden, 10.0.0.2')))).toBe('10.0.0.1');
      // Garbage left of the client's own entry is what the client sent: ignored.
      expect(clients.clientAddress(request('10.0.0.1', xff('<script>, 203.0.113.7')))).toBe('203.0.113.7');
    });

    it('from any other address X-Forwarded-For is ignored, however it is spelled', () => {
      expect(clients.clientAddress(request('203.0.113.9', xff('198.51.100.1')))).toBe('203.0.113.9');
      expect(clients.clientAddress(request('203.0.113.9', xff('10.0.0.1')))).toBe('203.0.113.9');
      expect(clients.clientAddress(request('2001:db8::2', xff('198.51.100.1')))).toBe('2001:db8::2');
    });
  });

  it('refuses ranges that did not come through validation', () => {
    expect(() => new ClientAddresses({ trustedProxies: ['nginx'] })).toThrow('trustedProxies: "nginx" is not an IP address or a CIDR range');
  });
});
