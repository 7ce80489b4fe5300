import { Fulfillment } from './fulfillment.entity';
import { canMove, FULFILLMENT_STATUSES, FULFILLMENT_TRANSITIONS } from './fulfillment.state';

const ORDER = {
  id: '01a00000-0000-7000-8000-0000000000aa',
  reference: 'ORD-1',
  carrier: 'default',
  shipTo: { name: 'A', line1: 'B', city: 'C', postalCode: 'D', country: 'GB' },
  items: [{ sku: 'S', quantity: 1 }],
};

describe('the fulfillment lifecycle (fulfillment.state.ts)', () => {
  // Every cell of the 3×3 matrix, written out so that a change of the table must change the test.
  const allowed: Record<string, string[]> = { requested: ['dispatched', 'failed'], dispatched: [], failed: ['requested'] };
  const cells = FULFILLMENT_STATUSES.flatMap((from) => FULFILLMENT_STATUSES.map((to) => [from, to, allowed[from].includes(to)] as const));

  it('the table', () => {
    expect(FULFILLMENT_TRANSITIONS).toEqual(allowed);
  });

  it.each(cells)('%s → %s: %s', (from, to, expected) => {
    expect(canMove(from, to)).toBe(expected);
  });

  it('dispatched keeps the shipment id; a second dispatch changes nothing', () => {
    const f = Fulfillment.request(ORDER);
    expect(f.dispatched('shp_1')).toBe(true);
    expect(f.dispatched('shp_2')).toBe(false);
    expect(f.shipmentId).toBe('shp_1');
  });

  it('a stop holds on a requested or failed fulfillment (a retry later must not ship), never on a dispatched one', () => {
    const waiting = Fulfillment.request(ORDER);
    expect(waiting.stop('order refunded')).toBe(true);
    expect(waiting.stop('order refunded')).toBe(false);
    expect(waiting.stopReason).toBe('order refunded');

    const failed = Fulfillment.request(ORDER);
    failed.failed('carrier answered 400');
    expect(failed.stop('order refunded')).toBe(true);
    expect(failed.requestAgain()).toBe(true);
    expect(failed.stopReason).toBe('order refunded');

    const shipped = Fulfillment.request(ORDER);
    shipped.dispatched('shp_1');
    expect(shipped.stop('order refunded')).toBe(false);
    expect(shipped.stopReason).toBeNull();
  });
});
