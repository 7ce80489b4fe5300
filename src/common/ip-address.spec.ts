import { maskedAddress } from './ip-address';

describe('maskedAddress', () => {
  it.each([
    ['203.0.113.77', '203.0.113.0/24'],
    ['::ffff:203.0.113.77', '203.0.113.0/24'],
    ['2001:db8:85a3:8d3:1319:8a2e:370:7348', '2001:db8:85a3::/48'],
    ['', '(unknown)'],
  ])('%j shows as %j', (address, shown) => {
    expect(maskedAddress(address)).toBe(shown);
  });
});
