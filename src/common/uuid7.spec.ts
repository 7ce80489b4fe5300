import { uuid7, uuid7Time } from './uuid7';

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The 48-bit millisecond timestamp at the front of a UUIDv7. */
function millis(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}

/** The 12-bit counter after the version nibble (rand_a, RFC 9562 §6.2 method 1). */
function sequence(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(13, 16), 16);
}

/**
 * uuid7 as a process that has just started has it: the module's own state (the last millisecond
 * and its sequence) fresh, untouched by the explicit times the other cases pass.
 */
function freshUuid7(): typeof uuid7 {
  let fresh: typeof uuid7 | undefined;
  jest.isolateModules(() => {
    fresh = (require('./uuid7') as typeof import('./uuid7')).uuid7;
  });
  return fresh!;
}

describe('uuid7', () => {
  it('is a lower-case UUID of version 7 and variant 10xx', () => {
    for (let i = 0; i < 1000; i++) {
      const id = uuid7();
      expect(UUID7.test(id)).toBe(true);
      const bytes = Buffer.from(id.replace(/-/g, ''), 'hex');
      expect(bytes.length).toBe(16);
      expect(bytes[6] >> 4).toBe(7);
      expect(bytes[8] >> 6).toBe(0b10);
    }
  });

  it('carries the given time in its first 48 bits', () => {
    const now = 1_790_590_562_123;
    const id = freshUuid7()(now);
    expect(millis(id)).toBe(now);
    const hex = now.toString(16).padStart(12, '0');
    expect(id.slice(0, 13)).toBe(`${hex.slice(0, 8)}-${hex.slice(8)}`);
  });

  it('handles the edges of the 48-bit range', () => {
    expect(freshUuid7()(0).startsWith('00000000-0000-7')).toBe(true);
    expect(freshUuid7()(2 ** 48 - 1).startsWith('ffffffff-ffff-7')).toBe(true);
  });

  it('defaults to the current time', () => {
    const before = Date.now();
    const id = uuid7();
    const after = Date.now();
    expect(millis(id)).toBeGreaterThanOrEqual(before);
    expect(millis(id)).toBeLessThanOrEqual(after);
  });

  it('sorts as strings in time order for increasing now', () => {
    const start = 1_790_590_562_000;
    const ids = Array.from({ length: 2000 }, (_, i) => uuid7(start + i * 7));
    expect([...ids].sort()).toEqual(ids);
  });

  it('sorts in time order across a change of leading hex digit', () => {
    const a = uuid7(0x0fff_ffff_ffff);
    const b = uuid7(0x1000_0000_0000);
    expect([b, a].sort()).toEqual([a, b]);
  });

  it('makes 10k unique ids, also within one millisecond', () => {
    const now = 1_790_590_562_000;
    const sameMillisecond = new Set(Array.from({ length: 10_000 }, () => uuid7(now)));
    expect(sameMillisecond.size).toBe(10_000);
    const defaultClock = new Set(Array.from({ length: 10_000 }, () => uuid7()));
    expect(defaultClock.size).toBe(10_000);
  });

  it('10,000 ids made in a tight loop are strictly increasing as strings; inside a millisecond the sequence counts up by one', () => {
    const make = freshUuid7();
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => make());
    const after = Date.now();
    for (let i = 1; i < ids.length; i++) {
      expect(ids[i] > ids[i - 1]).toBe(true);
      if (millis(ids[i]) === millis(ids[i - 1])) expect(sequence(ids[i])).toBe(sequence(ids[i - 1]) + 1);
      else expect(millis(ids[i])).toBeGreaterThan(millis(ids[i - 1]));
    }
    expect(new Set(ids).size).toBe(10_000);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(UUID7.test(id)).toBe(true);
    expect(millis(ids[0])).toBeGreaterThanOrEqual(before);
    // A borrowed millisecond (more than 4096 ids in one) may run one ahead of the clock.
    expect(millis(ids[ids.length - 1])).toBeLessThanOrEqual(after + 1);
  });

  it('never goes back: an explicit older time (or a clock stepping back) continues the last millisecond', () => {
    const make = freshUuid7();
    const current = make();
    let previous = current;
    for (const past of [Date.UTC(2026, 2, 1, 10, 0, 0, 0), millis(current) - 60_000, millis(current) - 2, 1]) {
      const id = make(past);
      expect(UUID7.test(id)).toBe(true);
      expect(millis(id)).toBe(millis(current));
      expect(id > previous).toBe(true);
      previous = id;
    }
    // A later time moves on again.
    expect(millis(make(millis(current) + 5))).toBe(millis(current) + 5);
  });

  it('varies the random bits between consecutive ids', () => {
    const now = 1_790_590_562_000;
    const a = uuid7(now).replace(/-/g, '').slice(12);
    const b = uuid7(now).replace(/-/g, '').slice(12);
    expect(a === b).toBe(false);
  });
});

describe('uuid7Time', () => {
  it('reads back the millisecond an id was made at', () => {
    expect(uuid7Time('019af6c2-1d52-7abc-8def-0123456789ab')).toBe(0x019af6c21d52);
    const at = 0x7fff00000000;
    expect(uuid7Time(uuid7(at))).toBe(at);
  });
});
