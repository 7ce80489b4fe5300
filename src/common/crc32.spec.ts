import { randomBytes } from 'node:crypto';
import { crc32, crc32ByTable } from './crc32';

describe('crc32', () => {
  it("matches PayPal's .NET SDK test (\"test_string\" is 0x0967b587) and the standard check value", () => {
    expect(crc32(Buffer.from('test_string'))).toBe(0x0967b587);
    expect(crc32ByTable(Buffer.from('test_string'))).toBe(0x0967b587);
    // The catalogue's check value of CRC-32/ISO-HDLC: "123456789" → 0xCBF43926.
    expect(crc32ByTable(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32ByTable(Buffer.alloc(0))).toBe(0);
  });

  it('the table and Node agree on random bytes, and the result is unsigned', () => {
    for (let i = 0; i < 50; i++) {
      const bytes = randomBytes(1 + (i * 37) % 3000);
      const value = crc32ByTable(bytes);
      expect(value).toBe(crc32(bytes));
      expect(value).toBeGreaterThanOrEqual(0);
    }
    expect(crc32ByTable(Buffer.from('a'))).toBe(0xe8b7be43);
  });
});
