import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(16 * 256);
let offset = pool.length;
let lastMs = 0;
let sequence = 0;

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, a 12-bit sequence, then random bits.
 * Ids made in time order land at the right edge of a B-tree index instead of on random pages,
 * which keeps inserts (and the WAL they write) cheap; they also sort by creation time, and within
 * one process strictly so (the sequence counts up inside a millisecond, RFC 9562 §6.2 method 1,
 * and the time never goes back).
 */
export function uuid7(now: number = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const b = pool.subarray(offset, offset + 16);
  offset += 16;
  // Never behind the last id of this process: a clock stepping back, or an explicit older time,
  // continues the sequence of the last millisecond instead of breaking the order.
  if (now > lastMs) {
    lastMs = now;
    sequence = b[6] & 0x07; // a random start, leaving room to count up
  } else {
    sequence++;
    if (sequence > 0xfff) {
      lastMs++; // borrow the next millisecond rather than repeat an order
      sequence = 0;
    }
  }
  const ms = lastMs;
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (sequence >> 8);
  b[7] = sequence & 0xff;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The Unix milliseconds a UUID version 7 was made at (its first 48 bits). */
export function uuid7Time(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
