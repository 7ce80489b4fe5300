import { crc32 } from '../../src/common/crc32';

/** A space, and what flipping these bits of it makes: a tab (0x20 ^ 0x29 = 0x09). Both are JSON whitespace. */
const SPACE = 0x20;
const TO_TAB = 0x29;

/**
 * `body` followed by `padding` bytes of spaces and tabs, chosen so that the whole has the CRC32
 * `target`: what anyone can compute, since the CRC32 of a message of a given length is affine in
 * its bits. Flipping a set of bits changes the CRC by the XOR of what each flip changes alone, so
 * the flips to make are the solution of 32 linear equations over GF(2) (Gaussian elimination over
 * the 32-bit effect of each space turned tab). JSON allows whitespace after the value, so the
 * result still parses as `body` does. Throws when the `padding` effects do not span every CRC (48
 * leave 16 to spare).
 */
export function padToCrc32(body: Buffer, target: number, padding = 48): Buffer {
  const base = Buffer.concat([body, Buffer.alloc(padding, SPACE)]);
  const start = crc32(base);
  /** By pivot (the highest bit set): an effect, and the positions whose flips make it. */
  const basis = new Map<number, { effect: number; flips: Set<number> }>();
  const reduce = (effect: number, flips: Set<number>) => {
    for (let bit = 31; bit >= 0 && effect !== 0; bit--) {
      const row = basis.get(bit);
      if ((effect >>> bit) & 1 && row) {
        effect = (effect ^ row.effect) >>> 0;
        for (const f of row.flips) flips.has(f) ? flips.delete(f) : flips.add(f);
      }
    }
    return effect;
  };
  for (let i = 0; i < padding; i++) {
    const flipped = Buffer.from(base);
    flipped[body.length + i] ^= TO_TAB;
    const flips = new Set([i]);
    const effect = reduce((crc32(flipped) ^ start) >>> 0, flips);
    if (effect !== 0) basis.set(31 - Math.clz32(effect), { effect, flips });
  }
  const flips = new Set<number>();
  if (reduce((start ^ target) >>> 0, flips) !== 0) throw new Error(`${padding} bytes of padding cannot reach every CRC32 after this body`);
  const forged = Buffer.from(base);
  for (const i of flips) forged[body.length + i] ^= TO_TAB;
  return forged;
}
