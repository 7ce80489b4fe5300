import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { deleteQueueKeys } from '../support/app';
import { emptyDir } from '../support/process';

/**
 * CONTRACT §7: an @OnPaymentEvent with an unknown event type is a start-up error naming it. Tested
 * as a host process on the built module (dist/): an app whose start fails inside Jest leaves the
 * module's PostgreSQL and Redis connections open there (nothing closes a half-started app).
 */

const HOST = join(__dirname, 'host', 'subscriber-host.js');

function startHost(subscribe: unknown, inTransaction = false) {
  const queuePrefix = `pwtest-host-${randomUUID().slice(0, 8)}`;
  const result = spawnSync(process.execPath, [HOST], {
    cwd: emptyDir(),
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      SUBSCRIBE: JSON.stringify(subscribe),
      IN_TRANSACTION: String(inTransaction),
    },
    encoding: 'utf8',
    // A start that failed and then hung on open handles would be killed here, and fail the test.
    timeout: 30_000,
  });
  return { code: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr, queuePrefix };
}

describe('@OnPaymentEvent types checked at start (a host process on the built module)', () => {
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const prefix of prefixes) await deleteQueueKeys(prefix);
  });

  it.each([
    ['a type of its own', 'order.shipped', false],
    ['one unknown type among known ones', ['order.paid', 'order.shipped'], false],
    ['an unknown type, in the transaction', 'order.shipped', true],
  ])('%s (%j, inTransaction %s): the start fails once, naming order.shipped, exit 1', (_what, subscribe, inTransaction) => {
    const out = startHost(subscribe, inTransaction as boolean);
    prefixes.push(out.queuePrefix);
    expect({ code: out.code, signal: out.signal }).toEqual({ code: 1, signal: null });
    expect(out.stdout).not.toContain('started');
    const lines = out.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Start failed: @OnPaymentEvent on ShippingListener\.onEvent: unknown event type "order\.shipped"/);
    // Only the unknown one is named as unknown.
    expect(lines[0]).not.toMatch(/unknown event type[^(]*"order\.paid"/);
  });

  it('no type at all: the start fails, saying so', () => {
    const out = startHost([]);
    prefixes.push(out.queuePrefix);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^Start failed: @OnPaymentEvent on ShippingListener\.onEvent: no event type given/);
  });

  it.each([['order.paid'], [['order.paid', 'order.refunded']], ['*']])('a known subscription (%j) starts, closes and exits 0 by itself', (subscribe) => {
    const out = startHost(subscribe);
    prefixes.push(out.queuePrefix);
    expect({ code: out.code, signal: out.signal, stderr: out.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(out.stdout).toBe('started\nclosed\n');
  });
});
