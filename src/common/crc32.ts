import * as zlib from 'node:zlib';

/** The CRC-32 table (IEEE 802.3, reflected polynomial 0xEDB88320), for a Node without `zlib.crc32`. */
let table: Uint32Array | undefined;

function crcTable(): Uint32Array {
  if (table) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** The CRC-32 Node computes when it has it (20.15, 22.2 and later): the same function, in C. */
const native = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

/**
 * The standard CRC-32 (zlib's, Java's `java.util.zip.CRC32`) of `bytes`, as an unsigned integer:
 * what PayPal signs in place of the body.
 */
export function crc32(bytes: Uint8Array): number {
  if (native) return native(bytes) >>> 0;
  return crc32ByTable(bytes);
}

/** The same, computed here (exported so that a test compares the two). */
export function crc32ByTable(bytes: Uint8Array): number {
  const t = crcTable();
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
