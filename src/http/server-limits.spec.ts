import { connectionCapacity, OPEN_FILES_RESERVE, parseOpenFileLimit, shareOf } from './server-limits';

const LIMITS = (soft: string, hard: string) =>
  [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             63304                63304                processes ',
    `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     `,
    'Max locked memory         8388608              8388608              bytes     ',
  ].join('\n');

describe('the connections the process accepts', () => {
  it('reads the soft limit of open files from /proc/self/limits', () => {
    expect(parseOpenFileLimit(LIMITS('1024', '524288'))).toBe(1024);
    expect(parseOpenFileLimit(LIMITS('20000', '20000'))).toBe(20_000);
    expect(parseOpenFileLimit(LIMITS('unlimited', 'unlimited'))).toBeNull();
    expect(parseOpenFileLimit('')).toBeNull();
  });

  it('is the configured maximum, or what the open files leave once the reserve is kept back', () => {
    expect(OPEN_FILES_RESERVE).toBe(256);
    expect(connectionCapacity(4096, 20_000)).toBe(4096);
    expect(connectionCapacity(4096, 4096 + 256)).toBe(4096);
    expect(connectionCapacity(4096, 4096 + 255)).toBe(4095);
    expect(connectionCapacity(4096, 1024)).toBe(768);
    // A small limit keeps back half of it at most.
    expect(connectionCapacity(4096, 300)).toBe(150);
    expect(connectionCapacity(4096, 1)).toBe(1);
    // Unreadable (not Linux) or unlimited: the configured maximum.
    expect(connectionCapacity(4096, null)).toBe(4096);
  });

  it('one address holds a quarter of it, at least one', () => {
    expect([shareOf(4096), shareOf(768), shareOf(64), shareOf(5), shareOf(3), shareOf(1)]).toEqual([1024, 192, 16, 1, 1, 1]);
  });
});
