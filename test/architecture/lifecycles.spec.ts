import { finalStatuses, Lifecycle, lifecycleProblems, reachableFrom } from '../../src/common/lifecycle';
import { FULFILLMENT_LIFECYCLE } from '../../src/fulfillment/fulfillment.state';
import { BACKFILL_LIFECYCLE } from '../../src/operations/backfill/backfill.state';
import { OUTBOX_LIFECYCLE } from '../../src/outbox/outbox.state';
import { ORDER_LIFECYCLE } from '../../src/payments/order.state';
import { PAYMENT_LIFECYCLE } from '../../src/payments/payment.state';
import { INBOX_LIFECYCLE } from '../../src/webhooks/inbox.state';

/**
 * Every lifecycle of the module is one kind of table, walked by one guard (src/common/lifecycle.ts),
 * and each is checked the same way: well formed, every status reachable from where a new one
 * starts, and every status either final or with a way on. What each table holds is pinned by its
 * own spec beside it.
 */
const LIFECYCLES: Array<Lifecycle<string>> = [INBOX_LIFECYCLE, PAYMENT_LIFECYCLE, ORDER_LIFECYCLE, OUTBOX_LIFECYCLE, FULFILLMENT_LIFECYCLE, BACKFILL_LIFECYCLE];

describe.each(LIFECYCLES.map((l) => [l.name, l] as const))('the %s lifecycle', (_name, lifecycle) => {
  it('is well formed: a row per status, known targets, known initial statuses', () => {
    expect(lifecycleProblems(lifecycle)).toEqual([]);
  });

  it('reaches every status from an initial one', () => {
    expect([...reachableFrom(lifecycle, lifecycle.initial)].sort()).toEqual([...lifecycle.statuses].sort());
  });

  it('has a final status, and a way from every status to one', () => {
    const finals = finalStatuses(lifecycle);
    expect(finals.length).toBeGreaterThan(0);
    for (const status of lifecycle.statuses) {
      const onward = reachableFrom(lifecycle, [status]);
      expect({ status, reachesAFinal: finals.some((f) => onward.has(f)) }).toEqual({ status, reachesAFinal: true });
    }
  });
});

it('covers every lifecycle of the module', () => {
  expect(LIFECYCLES.map((l) => l.name).sort()).toEqual(['backfill', 'delivery', 'fulfillment', 'order', 'outbox message', 'payment']);
});
