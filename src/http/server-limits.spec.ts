import { Logger } from '@nestjs/common';
import { createServer } from 'node:http';
import { capConnections, connectionCapacity, OPEN_FILES_RESERVE, parseOpenFileLimit, shareOf } from './server-limits';

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

describe('capConnections', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  it('sets maxConnections to the capacity, and says once in one line when the open-file limit lowered it', () => {
    const server = createServer();
    capConnections(server, 4096, 'set', 1024);
    capConnections(server, 4096, 'set', 1024);
    expect(server.maxConnections).toBe(768);
    expect(warn.mock.calls).toEqual([
      [
        'the open-file limit (1024) allows 768 connections, not httpMaxConnections 4096: raise it (ulimit -n, LimitNOFILE) to accept more; one address holds at most 192',
      ],
    ]);
  });

  it('says nothing when the open-file limit leaves room, or cannot be read', () => {
    const server = createServer();
    capConnections(server, 4096, 'set', 20_000);
    expect(server.maxConnections).toBe(4096);
    capConnections(server, 64, 'set', null);
    expect(server.maxConnections).toBe(64);
    expect(warn).not.toHaveBeenCalled();
  });

  it("'lower' keeps a lower maximum of the host's own, and sets one where there was none", () => {
    const own = createServer();
    own.maxConnections = 100;
    capConnections(own, 4096, 'lower', 20_000);
    expect(own.maxConnections).toBe(100);
    const none = createServer();
    capConnections(none, 4096, 'lower', 20_000);
    expect(none.maxConnections).toBe(4096);
    const higher = createServer();
    higher.maxConnections = 10_000;
    capConnections(higher, 4096, 'lower', 20_000);
    expect(higher.maxConnections).toBe(4096);
  });
});
